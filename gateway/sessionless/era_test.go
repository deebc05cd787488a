package sessionless

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

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
		{"~echo~", "~echo~", nil},                       // 0x7e, the last visible ASCII
		{"=?base64??=", "", nil},                        // the sentinel form of the empty value
		{"=?base64?=", "=?base64?=", nil},               // prefix and suffix overlap: not the form, as written
	} {
		got, err := plainHeaderValue(tc.in)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("plainHeaderValue(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestCheckMirrorHeaders: Mcp-Method and, for a named method, Mcp-Name must say what the body
// says, or the request is refused 400 -32020 before anything reaches a worker: a proxy routing
// or filtering on the headers must never see another tool than the one called. The body's own
// bytes are taken as they are; other spellings only as visible ASCII or the base64 form.
func TestCheckMirrorHeaders(t *testing.T) {
	body := func(method, name string) string {
		q, _ := json.Marshal(name)
		return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"name":` + string(q) + `,` + sessionlessMetaOK + `}}}`
	}
	for _, tt := range []struct {
		name         string
		body         string
		method, mcpN string // the headers; "-" leaves one out
		refused      bool
	}{
		{"both match", body("tools/call", "echo"), "tools/call", "echo", false},
		{"the base64 form of the name", body("tools/call", "echo"), "tools/call", "=?base64?ZWNobw==?=", false},
		{"the body's own bytes outside ASCII", body("tools/call", "\u00e9cho"), "tools/call", "\u00e9cho", false},
		{"the base64 form outside ASCII", body("tools/call", "\u00e9cho"), "tools/call", "=?base64?w6ljaG8=?=", false},
		{"another tool named", body("tools/call", "echo"), "tools/call", "delete", true},
		{"another tool, base64", body("tools/call", "delete"), "tools/call", "=?base64?ZWNobw==?=", true},
		{"a name outside ASCII not the body's", body("tools/call", "echo"), "tools/call", "\u00e9cho", true},
		{"the name left out", body("tools/call", "echo"), "tools/call", "-", true},
		{"another method", body("tools/call", "echo"), "prompts/get", "echo", true},
		{"the method left out", body("tools/call", "echo"), "-", "echo", true},
		{"a body whose name is the sentinel form, sent as written", body("tools/call", "=?base64?ZGVsZXRl?="), "tools/call", "=?base64?ZGVsZXRl?=", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := jsonrpc.Parse([]byte(tt.body), jsonrpc.Options{Client: true})
			if err != nil {
				t.Fatalf("not a message: %v", err)
			}
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Header.Set(HeaderProtocolVersion, Version)
			if tt.method != "-" {
				r.Header.Set(HeaderMethod, tt.method)
			}
			if tt.mcpN != "-" {
				r.Header.Set(HeaderName, tt.mcpN)
			}
			_, he := check(r, msg, testServed)
			switch {
			case tt.refused && he == nil:
				t.Error("accepted")
			case tt.refused && (he.Status != http.StatusBadRequest || he.Code != CodeHeaderMismatch):
				t.Errorf("refused %d %d (%s), want 400 %d", he.Status, he.Code, he.Message, CodeHeaderMismatch)
			case !tt.refused && he != nil:
				t.Errorf("refused: %d %d %s", he.Status, he.Code, he.Message)
			}
		})
	}
}
