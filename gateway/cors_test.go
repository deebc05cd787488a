package gateway

import (
	"net/http"
	"strings"
	"testing"
)

func TestCORSForAllowedOrigins(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.AllowedOrigins = []string{"http://localhost:6274"} })
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, f.url, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-session-id")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	ok := preflight("http://localhost:6274")
	if ok.StatusCode != http.StatusNoContent || ok.Header.Get("Access-Control-Allow-Origin") != "http://localhost:6274" ||
		ok.Header.Get("Access-Control-Allow-Headers") == "" {
		t.Errorf("preflight from an allowed origin: %d %v", ok.StatusCode, ok.Header)
	}
	bad := preflight("https://evil.example")
	if bad.Header.Get("Access-Control-Allow-Origin") != "" || bad.StatusCode == http.StatusNoContent {
		t.Errorf("preflight from a foreign origin was allowed: %d %v", bad.StatusCode, bad.Header)
	}

	// A real request from the allowed origin can read the session id and the challenge.
	c := f.client("alice-rw")
	r := c.post(rpcBody("1", "initialize", initParams("2025-06-18")), "Origin", "http://localhost:6274")
	if r.status != http.StatusOK || r.header.Get("Access-Control-Expose-Headers") == "" || r.header.Get("Access-Control-Allow-Origin") != "http://localhost:6274" {
		t.Errorf("initialize from an allowed origin: %d %v", r.status, r.header)
	}
}

// A browser client's 2026-07-28 request carries Mcp-Method, Mcp-Name and the tool's
// Mcp-Param-* headers: the preflight allows them (a Mcp-Param-* name only if it is a header
// name), and a refusal's Retry-After is readable.
func TestCORSAllowsSessionlessHeaders(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.AllowedOrigins = []string{"https://app.example"} })
	req, _ := http.NewRequest(http.MethodOptions, f.url, nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,mcp-protocol-version,mcp-method,mcp-name,mcp-param-region, mcp-param-a(b),x-other")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	allowed := map[string]bool{}
	for name := range strings.SplitSeq(resp.Header.Get("Access-Control-Allow-Headers"), ",") {
		allowed[strings.ToLower(strings.TrimSpace(name))] = true
	}
	for _, name := range []string{"authorization", "mcp-method", "mcp-name", "mcp-param-region"} {
		if !allowed[name] {
			t.Errorf("Access-Control-Allow-Headers %q lacks %s", resp.Header.Get("Access-Control-Allow-Headers"), name)
		}
	}
	for _, name := range []string{"x-other", "mcp-param-a(b)"} {
		if allowed[name] {
			t.Errorf("Access-Control-Allow-Headers allows %q", name)
		}
	}
	if !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Errorf("Access-Control-Expose-Headers %q lacks Retry-After", resp.Header.Get("Access-Control-Expose-Headers"))
	}
}
