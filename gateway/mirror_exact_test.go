package gateway

import (
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
)

// Mcp-Method and Mcp-Name mirror the body for proxies and WAFs that route or filter on them
// (SEP-2243); gemgate refuses a request whose headers say something the body does not, and
// compares them as a proxy sees them: byte for byte (net/http has taken off the spaces and
// tabs HTTP allows around a value), not after strings.TrimSpace, which strips Unicode white
// space that HTTP keeps. A rule "block Mcp-Name: delete_note" never matches
// "delete_note<NBSP>", so gemgate must not take that header for the body's delete_note. A
// name outside visible ASCII must come in the =?base64?…?= form, and its base64 is read
// strictly: one name, one spelling.
func TestMirrorHeadersAreComparedExactly(t *testing.T) {
	f := newSessionlessFixture(t)
	c := f.client("alice-rw")
	cases := []struct {
		name   string
		header []string
	}{
		{"Mcp-Name with a trailing NO-BREAK SPACE", []string{sessionless.HeaderName, "echo\u00a0"}},
		{"Mcp-Name with a leading IDEOGRAPHIC SPACE", []string{sessionless.HeaderName, "\u3000echo"}},
		{"Mcp-Name with a trailing NEL", []string{sessionless.HeaderName, "echo\u0085"}},
		{"Mcp-Method with a trailing NO-BREAK SPACE", []string{sessionless.HeaderMethod, "tools/call\u00a0"}},
		{"Mcp-Method with a trailing LINE SEPARATOR", []string{sessionless.HeaderMethod, "tools/call\u2028"}},
		{"Mcp-Name in base64 with padding bits set", []string{sessionless.HeaderName, "=?base64?ZWNobx==?="}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := string(rune('1' + i))
			r := c.sessionless(id, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "ran"}}, tc.header...)
			if r.status != http.StatusBadRequest || len(r.msgs) != 1 || r.msgs[0].Error == nil ||
				rpcError(t, r.msgs[0]).Code != sessionless.CodeHeaderMismatch {
				t.Errorf("%s: %q, a header that is not the body's value: status %d, body %s; want 400 with %d (HeaderMismatch)",
					tc.header[0], tc.header[1], r.status, r.body, sessionless.CodeHeaderMismatch)
			}
		})
	}
	// The canonical spelling still passes.
	r := c.sessionless("9", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "ran"}}, sessionless.HeaderName, "=?base64?ZWNobw==?=")
	if r.status != http.StatusOK || len(r.msgs) != 1 || r.msgs[0].Error != nil {
		t.Errorf("Mcp-Name in canonical base64: status %d, body %s; want the call answered", r.status, r.body)
	}
}
