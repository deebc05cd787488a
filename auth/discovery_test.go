package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestTokenEndpointFromDiscovery(t *testing.T) {
	var issuer string
	docIssuer := func() string { return issuer }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": docIssuer(), "jwks_uri": issuer + "/jwks", "token_endpoint": issuer + "/token",
			"authorization_endpoint": issuer + "/authorize",
		})
	}))
	defer srv.Close()
	issuer = srv.URL
	got, err := TokenEndpoint(context.Background(), nil, issuer, false)
	if err != nil || got != issuer+"/token" {
		t.Fatalf("TokenEndpoint = %q, %v", got, err)
	}
	// A document naming another issuer is refused, as for the keys.
	docIssuer = func() string { return "https://elsewhere.example" }
	if _, err := TokenEndpoint(context.Background(), nil, issuer, false); err == nil {
		t.Error("a discovery document for another issuer was accepted")
	}
}

// SecureURL is the one rule for every URL gemgate takes keys from or sends secrets to.
func TestSecureURL(t *testing.T) {
	for _, tc := range []struct {
		url           string
		allowInsecure bool
		want          bool
	}{
		{"https://id.example/realms/t", false, true},
		{"http://127.0.0.1:8080/certs", false, true},
		{"http://localhost/certs", false, true},
		{"http://[::1]:8080/certs", false, true},
		{"http://id.example/certs", false, false},
		{"http://id.example/certs", true, true},
		{"HTTP://id.example/certs", false, false},
		{"http://127.0.0.1.nip.io/certs", false, false},
		{"http://user@127.0.0.1@id.example/certs", false, false},
		{"ftp://127.0.0.1/certs", true, false},
		{"https:///no-host", false, false},
		{"/relative", true, false},
	} {
		if got := SecureURL(tc.url, tc.allowInsecure); got != tc.want {
			t.Errorf("SecureURL(%q, %v) = %v, want %v", tc.url, tc.allowInsecure, got, tc.want)
		}
	}
}

// A discovery the issuer refuses with a large body fails with a short error: go-oidc quotes
// the body whole, and the error lands in a log line on every retry.
func TestDiscoveryErrorIsClipped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, strings.Repeat("x", 512<<10))
	}))
	defer srv.Close()
	_, err := discoverJWKSURL(context.Background(), srv.Client(), srv.URL, false)
	if err == nil {
		t.Fatal("discovery against a 500 succeeded")
	}
	if len(err.Error()) > 1024 {
		t.Errorf("discovery against a 500 with 512 KiB of body: an error of %d bytes, want one under 1 KiB", len(err.Error()))
	}
}

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

// The https rule against what an issuer hands gemgate: redirects, and URLs on this host.

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

// TestRemoteIssuerCannotNameThisHostInAnotherSpelling: with allow_insecure_http (an http
// issuer on a private network), a remote issuer's jwks_uri on this host is refused as one
// on localhost is, also as an unspecified address (0.0.0.0, [::]), to which a connection
// reaches this host.
func TestRemoteIssuerCannotNameThisHostInAnotherSpelling(t *testing.T) {
	var localHits atomic.Int32
	local := httptest.NewServer(servedJWKS(t, &localHits)) // a local user's server on a high port
	defer local.Close()
	_, localPort, _ := net.SplitHostPort(local.Listener.Addr().String())
	for _, host := range []string{"0.0.0.0", "[::]"} {
		t.Run(host, func(t *testing.T) {
			jwks := "http://" + host + ":" + localPort + "/certs"
			const iss = "http://idp.example:8080/realms/team" // a remote issuer, over plain HTTP
			idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "jwks_uri": jwks,
					"authorization_endpoint": iss + "/auth", "token_endpoint": iss + "/token"})
			}))
			defer idp.Close()
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr == "idp.example:8080" {
					addr = idp.Listener.Addr().String()
				}
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}
			before := localHits.Load()
			_, err := NewVerifier(context.Background(), Config{Issuer: iss, Audiences: []string{"https://mcp.example/mcp"},
				HTTPClient: &http.Client{Transport: tr}, AllowInsecureHTTP: true})
			if TrustedURL(iss, jwks, true) || err == nil || localHits.Load() > before {
				t.Errorf("the remote issuer %s named jwks_uri %s and its keys were trusted (%d fetches from the gateway host; error: %v)", iss, jwks, localHits.Load()-before, err)
			}
		})
	}
}

// TestDiscoveryDocumentIsBounded: the JWKS is read up to 1 MiB, but discovery (go-oidc's
// NewProvider, io.ReadAll) reads the issuer's openid-configuration without any bound: an
// issuer, a proxy in front of it or a MITM on an allow_insecure_http link that answers
// with an endless document makes gemgate buffer it all, at start and on every retry while
// keys are not loaded (and for the token endpoint's discovery of the token exchange).
func TestDiscoveryDocumentIsBounded(t *testing.T) {
	const total = 96 << 20
	var written atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/openid-configuration" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		head := fmt.Sprintf(`{"issuer":%q,"jwks_uri":%q,"pad":"`, srv.URL, srv.URL+"/jwks")
		n, _ := w.Write([]byte(head))
		written.Add(int64(n))
		chunk := []byte(strings.Repeat("a", 64<<10))
		for written.Load() < total {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`"}`))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = NewVerifier(ctx, Config{Issuer: srv.URL, Audiences: []string{testResource}, HTTPClient: srv.Client()})
	if got := written.Load(); got > 16<<20 {
		t.Errorf("gemgate read %d MiB of the issuer's discovery document; it should stop at a bound like the JWKS's 1 MiB", got>>20)
	}
}

// boundedBody: an answer of exactly the bound reads whole; one byte more fails the read.
func TestBoundedBodyFailsPastItsBound(t *testing.T) {
	for _, tc := range []struct {
		size    int
		wantErr bool
	}{{0, false}, {10, false}, {11, true}, {4096, true}} {
		b := &boundedBody{ReadCloser: io.NopCloser(strings.NewReader(strings.Repeat("a", tc.size))), left: 10}
		got, err := io.ReadAll(b)
		if tc.wantErr != (err != nil) || !tc.wantErr && len(got) != tc.size {
			t.Errorf("a body of %d bytes, bound 10: read %d, %v", tc.size, len(got), err)
		}
		if tc.wantErr && !errors.Is(err, errBodyTooLarge) {
			t.Errorf("a body of %d bytes, bound 10: %v, want errBodyTooLarge", tc.size, err)
		}
	}
}
