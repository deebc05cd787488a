package gateway

import (
	"net/http"
	"testing"
)

// Mcp-Method and Mcp-Name mirror the body for proxies and WAFs that route or filter on them
// (SEP-2243); gemgate refuses a request whose headers say something the body does not. The
// header is compared after strings.TrimSpace, which strips Unicode white space (NO-BREAK
// SPACE, NEL, U+2028, IDEOGRAPHIC SPACE...) that HTTP does not: net/http keeps those bytes
// (obs-text) in the value, and so does every intermediary. A rule "block Mcp-Name:
// delete_note" never matches "delete_note<NBSP>", yet gemgate takes that header as equal to
// the body's delete_note and runs the call. The go-sdk's own server compares exactly.
func TestRev1MirrorHeadersAreComparedExactly(t *testing.T) {
	f := newModernFixture(t)
	c := f.client("alice-rw")
	cases := []struct {
		name   string
		header []string
	}{
		{"Mcp-Name with a trailing NO-BREAK SPACE", []string{headerName, "echo\u00a0"}},
		{"Mcp-Name with a leading IDEOGRAPHIC SPACE", []string{headerName, "\u3000echo"}},
		{"Mcp-Name with a trailing NEL", []string{headerName, "echo\u0085"}},
		{"Mcp-Method with a trailing NO-BREAK SPACE", []string{headerMethod, "tools/call\u00a0"}},
		{"Mcp-Method with a trailing LINE SEPARATOR", []string{headerMethod, "tools/call\u2028"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := string(rune('1' + i))
			r := c.modern(id, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "ran"}}, tc.header...)
			if r.status != http.StatusBadRequest || len(r.msgs) != 1 || r.msgs[0].Error == nil ||
				rpcError(t, r.msgs[0]).Code != codeHeaderMismatch {
				t.Errorf("%s: %q, a header that is not the body's value: status %d, body %s; want 400 with %d (HeaderMismatch)",
					tc.header[0], tc.header[1], r.status, r.body, codeHeaderMismatch)
			}
		})
	}
}
