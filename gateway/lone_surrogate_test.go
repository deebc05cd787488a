package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/jsonrpc"
)

// A tool name with a lone UTF-16 surrogate escape is "echo\uFFFD" to encoding/json, to gemgate
// and to the go-sdk, but keeps its surrogate in a worker written in JavaScript or Python: the
// name gemgate's policy judges would not be the name such a worker runs. It is refused as
// invalid params, and nothing reaches the worker.
func TestToolNameWithLoneSurrogateIsRefused(t *testing.T) {
	f := newSessionlessFixture(t)
	c := f.client("alice-rw")
	meta, err := json.Marshal(sessionlessMeta())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{`echo\ud800`, `\udc00echo`, `ec\ud83dho`} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":{"text":"ran"},"_meta":` + string(meta) + `}}`
		r := c.post(body, sessionless.HeaderProtocolVersion, sessionless.Version, sessionless.HeaderMethod, "tools/call", sessionless.HeaderName, "=?base64?ZWNob++/vQ==?=")
		if r.status != http.StatusBadRequest || len(r.msgs) != 1 || rpcError(t, r.only(t)).Code != jsonrpc.CodeInvalidParams ||
			!strings.Contains(rpcError(t, r.only(t)).Message, "surrogate") || strings.Contains(string(r.body), "ran") {
			t.Errorf("tools/call named %q: status %d, body %s; want 400 with %d (invalid params), nothing run", name, r.status, r.body, jsonrpc.CodeInvalidParams)
		}
	}
}
