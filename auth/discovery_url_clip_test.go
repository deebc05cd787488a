package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// 50931e8 clips the error of a failed discovery (go-oidc quoted the answer whole) so that a
// log line on every retry is never the issuer's choice of size. But discoverJWKSURL and
// TokenEndpoint still quote the discovered jwks_uri and token_endpoint whole (%q) when they
// fail TrustedURL: a discovery document of 200 OK whose jwks_uri is an http URL of most of
// a MiB (maxDiscoveryBytes) gives an error, and a warning on every refresh, of that size.
func TestDiscoveryErrorIsClippedForARefusedURL(t *testing.T) {
	long := "http://keys.example/" + strings.Repeat("a", 400<<10)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                 srv.URL,
			"authorization_endpoint": srv.URL + "/auth",
			"token_endpoint":         long,
			"jwks_uri":               long,
		})
	}))
	defer srv.Close()
	_, err := discoverJWKSURL(context.Background(), srv.Client(), srv.URL, false)
	if err == nil {
		t.Fatal("a jwks_uri over http to another host was taken")
	}
	if len(err.Error()) > 1024 {
		t.Errorf("discoverJWKSURL with a refused jwks_uri of 400 KiB: an error of %d bytes, want one under 1 KiB", len(err.Error()))
	}
	_, err = TokenEndpoint(context.Background(), srv.Client(), srv.URL, false)
	if err == nil {
		t.Fatal("a token_endpoint over http to another host was taken")
	}
	if len(err.Error()) > 1024 {
		t.Errorf("TokenEndpoint with a refused token_endpoint of 400 KiB: an error of %d bytes, want one under 1 KiB", len(err.Error()))
	}
}
