package auth

// The https rule against what an issuer hands gemgate: redirects, and URLs on this host.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// servedJWKS serves one EC key, counting the requests it answers.
func servedJWKS(t *testing.T, hits *atomic.Int32) http.HandlerFunc {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(n *big.Int) string { return base64.RawURLEncoding.EncodeToString(n.FillBytes(make([]byte, 32))) }
	return func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]any{"kty": "EC", "crv": "P-256", "kid": "k1",
			"use": "sig", "alg": "ES256", "x": b64(key.X), "y": b64(key.Y)}}})
	}
}

// SecureURL is applied to the jwks_uri that discovery names, but not to where that URL
// redirects: http.DefaultClient follows an https -> http redirect to another host, and the
// keys that arrive over plain HTTP are trusted. "One rule for every URL gemgate takes keys
// from" is bypassed by one 302 (a TLS proxy in front of the issuer that redirects to its
// http:// backend name is the same misconfiguration the new error message describes).
func TestDiscoveredJWKSRedirectToPlainHTTPIsRefused(t *testing.T) {
	var plainHits atomic.Int32
	plain := httptest.NewServer(servedJWKS(t, &plainHits)) // stands for http://keys.example
	defer plain.Close()
	var iss string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/certs" {
			http.Redirect(w, r, "http://keys.example/certs", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "jwks_uri": iss + "/certs",
			"authorization_endpoint": iss + "/auth", "token_endpoint": iss + "/token"})
	}))
	defer srv.Close()
	iss = srv.URL
	client := srv.Client()
	tr := client.Transport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.HasPrefix(addr, "keys.example:") { // another host, as DNS would have it
			addr = plain.Listener.Addr().String()
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	client.Transport = tr
	_, err := NewVerifier(context.Background(), Config{Issuer: iss, Audiences: []string{"https://mcp.example/mcp"}, HTTPClient: client})
	if err == nil || plainHits.Load() > 0 {
		t.Errorf("signing keys were fetched over plain HTTP from http://keys.example/certs after a redirect from the https jwks_uri (%d plain-HTTP fetches; NewVerifier error: %v)", plainHits.Load(), err)
	}
}

// The loopback exception exists so an operator may configure http://127.0.0.1 for an issuer
// on the gateway's own host. Applied to a URL that a remote https issuer's discovery
// document names, "loopback" means whatever listens on that port of the gateway's host: a
// Keycloak that builds its URLs from the Host its proxy passes (http://localhost:8080/...)
// sends gemgate to fetch keys from any local user's process on that port.
func TestRemoteIssuerCannotNameLoopbackJWKS(t *testing.T) {
	var localHits atomic.Int32
	local := httptest.NewServer(servedJWKS(t, &localHits)) // a local user's server on a high port
	defer local.Close()
	_, localPort, _ := net.SplitHostPort(local.Listener.Addr().String())
	var iss string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "jwks_uri": "http://localhost:" + localPort + "/certs",
			"authorization_endpoint": iss + "/auth", "token_endpoint": iss + "/token"})
	}))
	defer srv.Close()
	_, tlsPort, _ := net.SplitHostPort(srv.Listener.Addr().String())
	iss = "https://example.com:" + tlsPort // a remote issuer (httptest's certificate names example.com)
	client := srv.Client()
	tr := client.Transport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.HasPrefix(addr, "example.com:") {
			addr = srv.Listener.Addr().String()
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	client.Transport = tr
	_, err := NewVerifier(context.Background(), Config{Issuer: iss, Audiences: []string{"https://mcp.example/mcp"}, HTTPClient: client})
	if err == nil || localHits.Load() > 0 {
		t.Errorf("the remote issuer %s named jwks_uri http://localhost:%s/certs and its keys were trusted (%d fetches from the gateway host's loopback; error: %v)", iss, localPort, localHits.Load(), err)
	}
}
