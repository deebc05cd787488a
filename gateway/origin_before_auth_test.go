package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// The MCP transport (2025-11-25, "Security Warning") has a server answer 403 to a request whose
// Origin is present and not allowed, and docs/configuration.md says a foreign origin gets 403.
// A foreign page's request without a token, or with one the issuer would refuse, gets that 403
// too, in both eras and on every method, rather than a 401 whose challenge sends its client to
// the authorization server; an allowed origin's tokenless request still gets the 401.
func TestForeignOriginIsRefusedBeforeItsToken(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.AllowedOrigins = []string{"https://app.example"} })
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		name, method, token, version, origin string
		want                                 int
	}{
		{"POST without a token", http.MethodPost, "", "", "https://evil.example", http.StatusForbidden},
		{"POST with an unknown token", http.MethodPost, "forged", "", "https://evil.example", http.StatusForbidden},
		{"2026-07-28 POST without a token", http.MethodPost, "", "2026-07-28", "https://evil.example", http.StatusForbidden},
		{"GET without a token", http.MethodGet, "", "", "https://evil.example", http.StatusForbidden},
		{"DELETE without a token", http.MethodDelete, "", "", "https://evil.example", http.StatusForbidden},
		{"null origin without a token", http.MethodPost, "", "", "null", http.StatusForbidden},
		{"allowed origin without a token", http.MethodPost, "", "", "https://app.example", http.StatusUnauthorized},
		{"no origin without a token", http.MethodPost, "", "", "", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := f.client(tc.token)
			c.version = tc.version
			body := ping
			if tc.method != http.MethodPost {
				body, c.session = "", "s-1" // a session id, as a GET stream or a DELETE names one
			}
			r := c.request(t.Context(), tc.method, body, "Origin", tc.origin)
			if r.status != tc.want {
				t.Errorf("status %d, want %d (WWW-Authenticate %q, body %q)", r.status, tc.want, r.header.Get("WWW-Authenticate"), r.body)
			}
		})
	}
}

// Every Origin a request carries is checked before its token: one allowed and one foreign
// Origin is a foreign Origin (403), whichever comes first, not a request whose first value
// alone decides and that then gets the token's 401.
func TestEveryOriginIsCheckedBeforeTheToken(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.AllowedOrigins = []string{"https://app.example"} })
	for _, origins := range [][]string{
		{"https://app.example", "https://evil.example"},
		{"", "https://evil.example"},
		{"https://evil.example", "https://app.example"},
	} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header["Origin"] = origins
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("Origin %q: %d, want 403", origins, resp.StatusCode)
		}
	}
}
