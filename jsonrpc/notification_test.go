package jsonrpc

import (
	"strings"
	"testing"
)

// A notification without params has no params member: `"params": null` is not a valid
// JSON-RPC params value (an object or an array), and the TypeScript SDK drops such a
// notification as malformed.
func TestNotificationWithoutParams(t *testing.T) {
	cases := []struct {
		v    any
		want string
	}{
		{nil, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`},
		{map[string]int{"a": 1}, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"a":1}}`},
	}
	for _, c := range cases {
		if got := strings.TrimSpace(string(Notification("notifications/tools/list_changed", c.v).Encode())); got != c.want {
			t.Errorf("Notification(%v) = %s, want %s", c.v, got, c.want)
		}
	}
}
