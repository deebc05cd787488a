package gateway

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// rev2: a comma in a plain Mcp-Name or Mcp-Param-* value. HTTP makes a field value a list at
// its commas (RFC 9110 §5.3), and HAProxy, the proxy gemgate's scale-out puts in front, reads
// it so: req.hdr(mcp-name) of "file:///secret/x,file:///public/y" is "file:///public/y", the
// last element (checked on HAProxy 2.6.12; req.fhdr gives the whole line). gemgate compares
// the whole line with the body, so a rule "allow if req.hdr(mcp-name) -m beg file:///public/"
// passes a read of a URI a proxy never saw, and "deny if req.hdr(mcp-name) -m str
// delete_note" misses a tools/call of "delete_note,echo". The two readers disagree, so the
// value must be refused unless it comes in the =?base64?…?= form.
func TestMirrorHeaderWithACommaIsRefused(t *testing.T) {
	f := newModernFixture(t)
	c := f.client("alice-rw")
	r := c.modern("1", "tools/call", map[string]any{"name": "delete_note,echo", "arguments": map[string]any{}})
	if r.status != http.StatusBadRequest || len(r.msgs) != 1 || r.msgs[0].Error == nil ||
		rpcError(t, r.msgs[0]).Code != codeHeaderMismatch {
		t.Errorf("Mcp-Name %q (HAProxy's req.hdr reads %q): status %d, body %s; want 400 with %d (HeaderMismatch)",
			"delete_note,echo", "echo", r.status, r.body, codeHeaderMismatch)
	}

	bindings := schemaBindings(json.RawMessage(`{"properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`), nil, nil)
	msg := &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "tools/call",
		Params: json.RawMessage(`{"name":"t","arguments":{"region":"us-secret,eu"}}`)}
	h := http.Header{}
	h.Set(paramHeaderPrefix+"Region", "us-secret,eu")
	if he := checkParamHeaders(h, msg, bindings); he == nil {
		t.Errorf("Mcp-Param-Region %q (HAProxy's req.hdr reads %q): accepted; want 400 -32020", "us-secret,eu", "eu")
	}
}
