package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/gemgate/gemgate/gateway/sessionless"
)

// chiOnlyRoutes is how the gateway routed before routes had a direct entry for the MCP
// path: everything through chi, the endpoint's middleware on a subrouter. It is the oracle
// of TestDirectEntryRoutesAsChi.
func chiOnlyRoutes(g *Gateway) http.Handler {
	r := chi.NewRouter()
	r.Use(g.requestInfo, g.recoverer)
	r.Get("/healthz", g.healthz)
	r.Get("/readyz", g.readyz)
	if g.opts.Metadata != nil {
		r.Handle("/.well-known/oauth-protected-resource", g.opts.Metadata)
		r.Handle("/.well-known/oauth-protected-resource"+g.opts.MCPPath, g.opts.Metadata)
	}
	r.Route(g.opts.MCPPath, func(r chi.Router) {
		r.Use(g.cors, g.traceRefused, g.originGate, g.opts.Authenticate, g.headerGate)
		r.Post("/", g.handlePost)
		r.Get("/", sessionless.LegacyOnly(g.handleGet))
		r.Delete("/", sessionless.LegacyOnly(g.handleDelete))
		r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Allow", "GET, POST, DELETE")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		})
	})
	return r
}

// TestDirectEntryRoutesAsChi: every request the gateway's router answers is answered as
// chi alone answered it (same status, headers that matter and body), whatever the path's
// spelling, method, token, Origin or session header; the one difference is a path beneath
// the endpoint (/mcp/x), which chi alone sent through the endpoint's bearer-token check
// before its 404 and which now gets the 404 without a challenge.
func TestDirectEntryRoutesAsChi(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Metadata = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) })
		o.AllowLoopbackOrigins = true
	})
	g := f.gw
	got, want := g.requestDeadline(g.routes()), g.requestDeadline(chiOnlyRoutes(g))
	paths := []string{"/mcp", "/mcp/", "/%6Dcp", "/mc%70", "/MCP", "/mcp?x=1", "/mcp/?x=1", "//mcp", "/mcp%2F",
		"/healthz", "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp", "/", "/nope"}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodOptions, http.MethodHead, http.MethodPut, "PATCH", "FOO"}
	type variant struct{ token, origin, session, version string }
	variants := []variant{{}, {token: "alice-rw"}, {token: "alice-rw", session: "no-such-session"},
		{token: "alice-rw", version: sessionless.Version}, {token: "alice-rw", origin: "http://evil.example"},
		{origin: "http://127.0.0.1"}, {token: "forged"}}
	n := 0
	for _, p := range paths {
		for _, m := range methods {
			for _, v := range variants {
				req := func() *http.Request {
					var body *strings.Reader
					if m == http.MethodPost {
						body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
					} else {
						body = strings.NewReader("")
					}
					r := httptest.NewRequest(m, p, body)
					if m == http.MethodPost {
						r.Header.Set("Content-Type", "application/json")
					}
					r.Header.Set("Accept", "application/json, text/event-stream")
					if v.token != "" {
						r.Header.Set("Authorization", "Bearer "+v.token)
					}
					if v.origin != "" {
						r.Header.Set("Origin", v.origin)
						r.Header.Set("Access-Control-Request-Method", "POST")
					}
					if v.session != "" {
						r.Header.Set(headerSessionID, v.session)
					}
					if v.version != "" {
						r.Header.Set(sessionless.HeaderProtocolVersion, v.version)
					}
					return r
				}
				a, b := httptest.NewRecorder(), httptest.NewRecorder()
				got.ServeHTTP(a, req())
				want.ServeHTTP(b, req())
				if strings.HasPrefix(p, "/mcp/") && len(p) > len("/mcp/") && p[len("/mcp/")] != '?' {
					continue // not reached: "/mcp/?x=1" has path /mcp/
				}
				n++
				if a.Code != b.Code || a.Body.String() != b.Body.String() {
					t.Errorf("%s %s %+v: %d %q, chi alone: %d %q", m, p, v, a.Code, a.Body.String(), b.Code, b.Body.String())
					continue
				}
				for _, h := range []string{"Allow", "WWW-Authenticate", "Content-Type", "Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Vary", "Mcp-Session-Id"} {
					if a.Header().Get(h) != b.Header().Get(h) {
						t.Errorf("%s %s %+v: %s %q, chi alone %q", m, p, v, h, a.Header().Get(h), b.Header().Get(h))
					}
				}
			}
		}
	}
	if n < 500 {
		t.Fatalf("compared only %d requests", n)
	}

	// Beneath the endpoint: a plain 404, not the endpoint's middleware.
	r := httptest.NewRequest(http.MethodPost, "/mcp/x", strings.NewReader("{}"))
	w := httptest.NewRecorder()
	got.ServeHTTP(w, r)
	if w.Code != http.StatusNotFound || w.Header().Get("WWW-Authenticate") != "" {
		t.Errorf("POST /mcp/x: %d, WWW-Authenticate %q; want a plain 404", w.Code, w.Header().Get("WWW-Authenticate"))
	}
}
