package gateway

import (
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
)

// the go-sdk client (v1.8.0, the version in go.mod; mcp/streamable_headers.go
// setStandardHeaders: header.Set(nameHeader, name)) sends Mcp-Name as the body's name,
// raw, never =?base64?…?=-encoded, and its own server compares the header byte for byte
// (validateMcpHeaders: nameInHeader != nameInBody). net/http's client sends the UTF-8 bytes as
// they are. plainHeaderValue now refuses any byte past 0x7e in Mcp-Name with -32020, so a
// go-sdk client calling a tool, prompt or resource whose name or URI is not ASCII ("café",
// "note://ideas/日本") is refused by gemgate and by no go-sdk server. The byte-exact
// comparison already gives a proxy the same bytes gemgate compares; a raw UTF-8 Mcp-Name that
// equals the body's value byte for byte must not be a header mismatch.
func TestMcpNameRawUTF8FromGoSDKClientIsNotAMismatch(t *testing.T) {
	f := newSessionlessFixture(t)
	c := f.client("alice-rw")
	for i, tc := range []struct {
		method string
		params map[string]any
	}{
		{"tools/call", map[string]any{"name": "caf\u00e9", "arguments": map[string]any{}}},
		{"resources/read", map[string]any{"uri": "note://ideas/\u65e5\u672c"}},
		{"prompts/get", map[string]any{"name": "r\u00e9sum\u00e9"}},
	} {
		// c.sessionless sets Mcp-Name to the body's value as it is: what the go-sdk client sends.
		r := c.sessionless(string(rune('1'+i)), tc.method, tc.params)
		if r.status == http.StatusBadRequest && len(r.msgs) == 1 && r.msgs[0].Error != nil &&
			rpcError(t, r.msgs[0]).Code == sessionless.CodeHeaderMismatch {
			t.Errorf("%s with a non-ASCII name, Mcp-Name raw as the go-sdk client sends it: status %d, body %s; want no header mismatch",
				tc.method, r.status, r.body)
		}
	}
}
