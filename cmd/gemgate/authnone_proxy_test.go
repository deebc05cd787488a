package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/auth"
)

// With auth none every request acts as the local user, and configuration keeps gemgate on
// loopback. A reverse proxy on the same machine, not named anywhere in gemgate's
// configuration, would still hand the local user to each of its clients: its requests are
// refused by what they carry (here the X-Forwarded-For of Go's own reverse proxy), and so is
// a request addressed to a public name. The same initialize sent straight to gemgate is
// served, so the refusal is the proxy's, not the request's.
func TestAuthNoneRefusesRequestsThroughAProxy(t *testing.T) {
	c := mustLoad(t, unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--worker", "demo")...)
	srv, logs := buildLoggedServer(t, c)
	direct := httptest.NewUnstartedServer(srv.gw.Handler())
	direct.Config.ConnContext = auth.LocalConnContext // as serve's own server has it
	direct.Start()
	defer direct.Close()
	target, _ := url.Parse(direct.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Full duplex: else net/http may close the request body under the transport still
		// forwarding it, and the proxy answers 502 instead of gemgate's answer.
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()

	initialize := func(base, host string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp, body
	}

	for _, tc := range []struct{ name, base, host, why string }{
		{"through a reverse proxy", proxy.URL, "", "X-Forwarded-For"},
		{"addressed to a public name", direct.URL, "mcp.example.com", "Host header"},
		{"addressed to a look-alike of localhost", direct.URL, "localhoſt:8080", "Host header"},
	} {
		resp, body := initialize(tc.base, tc.host)
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Mcp-Session-Id") != "" {
			t.Errorf("%s: %d, session %q; want 403 and no session", tc.name, resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
		}
		if desc, _ := body["error_description"].(string); body["error"] != "access_denied" || !strings.Contains(desc, tc.why) || !strings.Contains(desc, "auth: oidc") {
			t.Errorf("%s: body %v; want access_denied naming %s and auth: oidc", tc.name, body, tc.why)
		}
	}
	if n := strings.Count(logs.String(), "request refused: auth none serves only the local user"); n != 3 {
		t.Errorf("%d refusals logged, want 3:\n%s", n, logs.String())
	}
	for _, host := range []string{"", "localhost:1234", "[::1]:8080", "127.0.0.1"} {
		resp, _ := initialize(direct.URL, host)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
			t.Errorf("initialize straight to gemgate with Host %q: %d, session %q; want 200 and a session", host, resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
		}
	}
}
