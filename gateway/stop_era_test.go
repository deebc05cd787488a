package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/jsonrpc"
)

// A call that the gateway's stop cuts short gets the same answer in both eras: the stop names
// itself and says the call may have taken effect (not "the session ended", which a session's
// call got, the pool's answer when Close ends the session).
func TestCallCutByTheStopIsAnsweredAlikeInBothEras(t *testing.T) {
	cut := func(start func(f *fixture, c *client) (*http.Response, <-chan string)) jsonrpc.RPCError {
		f := newSessionlessFixture(t)
		c := f.client("alice-rw")
		_, lines := start(f, c)
		if m := untilData(t, lines, 10*time.Second); m.Method != "notifications/progress" {
			t.Fatalf("first message %s", m.Encode())
		}
		f.gw.BeginShutdown()
		f.gw.Close()
		var last *jsonrpc.Message
		for _, l := range rest(t, lines, 10*time.Second) {
			if data, ok := strings.CutPrefix(l, "data: "); ok && data != "" {
				if m, err := jsonrpc.Parse([]byte(data), jsonrpc.Options{}); err == nil {
					last = m
				}
			}
		}
		return rpcError(t, last)
	}
	legacy := cut(func(f *fixture, c *client) (*http.Response, <-chan string) {
		c.open()
		return rawStream(t, c, http.MethodPost, rpcBody(`"x"`, "tools/call", slowParams(60, true, "tok")))
	})
	modern := cut(func(f *fixture, c *client) (*http.Response, <-chan string) {
		meta := sessionlessMeta()
		meta["progressToken"] = "p"
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "x", "method": "tools/call",
			"params": map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 60, "progress": true}, "_meta": meta}})
		return rawStream(t, c, http.MethodPost, string(b), sessionless.HeaderProtocolVersion, sessionless.Version, sessionless.HeaderMethod, "tools/call", sessionless.HeaderName, "slow")
	})
	if legacy.Code != modern.Code || legacy.Message != modern.Message || !strings.Contains(legacy.Message, "may or may not have taken effect") {
		t.Errorf("a call cut by the stop: a session's gets %d %q %v, a 2026-07-28 one %d %q %v; want the same, saying the call may have taken effect",
			legacy.Code, legacy.Message, legacy.Data, modern.Code, modern.Message, modern.Data)
	}
}
