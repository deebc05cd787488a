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

// TestIs: a POST is of the 2026-07-28 era when it carries no session id and its
// MCP-Protocol-Version header, or else its _meta protocolVersion, names 2026-07-28 or later
// (a later one, or one that is no date, is then refused as unsupported); anything else is the
// legacy era's.
func TestIs(t *testing.T) {
	meta := func(v string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"` + MetaProtocolVersion + `":"` + v + `"}}}`
	}
	const noMeta = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, tt := range []struct {
		name, session, header, body string
		want                        bool
	}{
		{"the header names it", "", Version, noMeta, true},
		{"a later revision", "", "2027-01-01", noMeta, true},
		{"no date at all", "", "v999.0.0", noMeta, true},
		{"an earlier revision", "", "2025-11-25", noMeta, false},
		{"a session id", "s1", Version, meta(Version), false},
		{"_meta names it", "", "", meta(Version), true},
		{"_meta names an earlier one", "", "", meta("2025-11-25"), false},
		{"_meta empty", "", "", meta(""), false},
		{"neither", "", "", noMeta, false},
		{"an earlier header, _meta the era's", "", "2025-11-25", meta(Version), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := jsonrpc.Parse([]byte(tt.body), jsonrpc.Options{Client: true})
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			if tt.session != "" {
				r.Header.Set(HeaderSessionID, tt.session)
			}
			if tt.header != "" {
				r.Header.Set(HeaderProtocolVersion, tt.header)
			}
			if got := Is(r, msg); got != tt.want {
				t.Errorf("Is = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestLegacyOnly: GET and DELETE exist for legacy sessions only: without a session id and
// naming 2026-07-28 or later they are 405 with Allow: POST; a session's, or a legacy
// client's, reach the handler.
func TestLegacyOnly(t *testing.T) {
	h := LegacyOnly(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, tt := range []struct {
		session, version string
		want             int
	}{
		{"", Version, http.StatusMethodNotAllowed},
		{"", "2099-01-01", http.StatusMethodNotAllowed},
		{"s1", Version, http.StatusNoContent},
		{"", "2025-11-25", http.StatusNoContent},
		{"", "", http.StatusNoContent},
	} {
		r := httptest.NewRequest(http.MethodGet, "/mcp", nil)
		if tt.session != "" {
			r.Header.Set(HeaderSessionID, tt.session)
		}
		if tt.version != "" {
			r.Header.Set(HeaderProtocolVersion, tt.version)
		}
		rec := httptest.NewRecorder()
		h(rec, r)
		if rec.Code != tt.want || (tt.want == http.StatusMethodNotAllowed && rec.Header().Get("Allow") != "POST") {
			t.Errorf("session %q, version %q: %d, Allow %q; want %d", tt.session, tt.version, rec.Code, rec.Header().Get("Allow"), tt.want)
		}
	}
}

// TestEraErrorCodes: the numbers the 2026-07-28 revision gives its errors, which clients
// match on (basic/index.mdx, Error Codes).
func TestEraErrorCodes(t *testing.T) {
	if CodeHeaderMismatch != -32020 || CodeMissingCapability != -32021 || CodeUnsupportedVersion != -32022 {
		t.Errorf("codes %d %d %d, want -32020 -32021 -32022", CodeHeaderMismatch, CodeMissingCapability, CodeUnsupportedVersion)
	}
}
