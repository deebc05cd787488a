package gateway

import (
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// de7441a refuses a URI gemgate decides on when it holds a lone UTF-16 surrogate escape
// (Object.String): resources/subscribe's uri is refused by the pool's uriOf. But the 2026-07-28
// subscriptions/listen reads params.notifications.resourceSubscriptions with encoding/json,
// not through Object.String: "res://a\ud800" and "res://a\udc00" both become
// "res://a\uFFFD", and listenSubscribe subscribes the worker to that third URI, which neither
// the client nor a JavaScript or Python worker named. It should be refused as the same URI is
// in resources/subscribe.
func TestListenResourceSubscriptionWithLoneSurrogateIsRefused(t *testing.T) {
	for _, uri := range []string{`res://a\ud800`, `res://a\udc00`} {
		msg, err := jsonrpc.ParseClient([]byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["` + uri + `"]}}}`))
		if err != nil {
			t.Fatal(err)
		}
		f, err := readListenFilter(msg)
		if err == nil {
			t.Errorf("resourceSubscriptions [%q] read as %q; want refused (lone surrogate escape), as resources/subscribe refuses it", uri, f.ResourceSubscriptions)
		}
	}
}
