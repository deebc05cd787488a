package gateway

import (
	"net/http"
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
