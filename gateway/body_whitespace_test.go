package gateway

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/jsonrpc"
)

// A body wrapped in white space that JSON does not allow (here NO-BREAK SPACE, U+00A0, and
// FORM FEED) is not JSON: a WAF or proxy that parses the body in front of gemgate, and the
// go-sdk's own Streamable HTTP server, refuse it or see no JSON-RPC message in it. gemgate
// must answer it as the malformed body it is (400, -32700), never run the call it hides.
func TestBodyInNonJSONWhitespaceIsRefused(t *testing.T) {
	f := newSessionlessFixture(t)
	c := f.client("alice-rw")
	params := map[string]any{"name": "echo", "arguments": map[string]any{"text": "hidden"}, "_meta": sessionlessMeta()}
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	if err != nil {
		t.Fatal(err)
	}
	if json.Valid(append([]byte("\u00a0"), msg...)) {
		t.Fatal("test is wrong: encoding/json accepts the body")
	}
	for _, ws := range []string{"\u00a0", "\f"} {
		r := c.post(ws+string(msg)+ws, sessionless.HeaderProtocolVersion, sessionless.Version, sessionless.HeaderMethod, "tools/call", sessionless.HeaderName, "echo")
		if r.status != http.StatusBadRequest || len(r.msgs) != 1 || rpcError(t, r.only(t)).Code != jsonrpc.CodeParseError {
			t.Errorf("body wrapped in %q (not JSON): status %d, body %s; want 400 with -32700 and nothing run", ws, r.status, r.body)
		}
	}
}
