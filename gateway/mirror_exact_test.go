package gateway

import (
	"errors"
	"net/http"
	"testing"
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
		{"Mcp-Name with a trailing NO-BREAK SPACE", []string{headerName, "echo\u00a0"}},
		{"Mcp-Name with a leading IDEOGRAPHIC SPACE", []string{headerName, "\u3000echo"}},
		{"Mcp-Name with a trailing NEL", []string{headerName, "echo\u0085"}},
		{"Mcp-Method with a trailing NO-BREAK SPACE", []string{headerMethod, "tools/call\u00a0"}},
		{"Mcp-Method with a trailing LINE SEPARATOR", []string{headerMethod, "tools/call\u2028"}},
		{"Mcp-Name in base64 with padding bits set", []string{headerName, "=?base64?ZWNobx==?="}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := string(rune('1' + i))
			r := c.sessionless(id, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "ran"}}, tc.header...)
			if r.status != http.StatusBadRequest || len(r.msgs) != 1 || r.msgs[0].Error == nil ||
				rpcError(t, r.msgs[0]).Code != codeHeaderMismatch {
				t.Errorf("%s: %q, a header that is not the body's value: status %d, body %s; want 400 with %d (HeaderMismatch)",
					tc.header[0], tc.header[1], r.status, r.body, codeHeaderMismatch)
			}
		})
	}
	// The canonical spelling still passes.
	r := c.sessionless("9", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "ran"}}, headerName, "=?base64?ZWNobw==?=")
	if r.status != http.StatusOK || len(r.msgs) != 1 || r.msgs[0].Error != nil {
		t.Errorf("Mcp-Name in canonical base64: status %d, body %s; want the call answered", r.status, r.body)
	}
}

// plainHeaderValue: visible ASCII, spaces and tabs pass as written; anything else must come
// base64-encoded, even when it equals the body's value; the base64 form decodes strictly.
func TestPlainHeaderValue(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      error
	}{
		{"echo", "echo", nil},
		{"a b\tc", "a b\tc", nil},
		{"\u00e9cho", "", errMustBeEncoded},
		{"echo\u00a0", "", errMustBeEncoded},
		{"echo\x00", "", errMustBeEncoded},
		{"echo\x7f", "", errMustBeEncoded},
		{"=?base64?w6ljaG8=?=", "\u00e9cho", nil},
		{"=?base64?ZWNobw==?=", "echo", nil},
		{"=?base64?ZWNobx==?=", "", errBadBase64},
		{"=?base64?ZWNobw?=", "", errBadBase64},
		{"=?base64?ZWNobw==", "=?base64?ZWNobw==", nil}, // not the sentinel form: taken as written
	} {
		got, err := plainHeaderValue(tc.in)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("plainHeaderValue(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}
