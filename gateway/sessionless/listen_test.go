package sessionless

import (
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// subscriptions/listen's resourceSubscriptions are URIs gemgate subscribes the worker to, so
// they are read as every string gemgate decides on (Object.String): one with a lone UTF-16
// surrogate escape is refused, as resources/subscribe refuses it. encoding/json alone reads
// "res://a\ud800" and "res://a\udc00" both as "res://a\uFFFD", a third URI that neither the
// client nor a JavaScript or Python worker named.
func TestListenResourceSubscriptionWithLoneSurrogateIsRefused(t *testing.T) {
	for _, uri := range []string{`res://a\ud800`, `res://a\udc00`} {
		msg, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["`+uri+`"]}}}`), jsonrpc.Options{Client: true})
		if err != nil {
			t.Fatal(err)
		}
		f, err := readListenFilter(msg)
		if err == nil {
			t.Errorf("resourceSubscriptions [%q] read as %q; want refused (lone surrogate escape), as resources/subscribe refuses it", uri, f.ResourceSubscriptions)
		}
	}
}
