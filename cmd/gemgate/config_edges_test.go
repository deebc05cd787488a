package main

// The configuration rules' own edges: each test failed on the first version of the rule.

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
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/auth/exchange"
)

// docs/configuration.md: "a value that is null ... is refused". Only a null inside a list is;
// a top-level null becomes "" and, for required_scopes, silently empties the default
// mcp:use: every token of the issuer with the right audience is let in, scope or not.
func TestConfigFileTopLevelNullIsRefused(t *testing.T) {
	file := writeFile(t, "gemgate.yaml", "issuer: https://id.example\nrequired_scopes:\n")
	c, err := load("serve", []string{"--config", file})
	if err != nil {
		if !strings.Contains(err.Error(), "required_scopes is empty (null)") {
			t.Errorf("refused for another reason: %v", err)
		}
		return
	}
	t.Errorf("required_scopes: (a YAML null) was accepted and left required_scopes=%q (default [mcp:use])", c.RequiredScopes)
}

// A file that ends with a document marker holds one document and an empty one: nothing is
// dropped, yet it is now refused as "more than one YAML document" (yaml.Unmarshal took it).
func TestConfigFileTrailingDocumentMarkerIsOneDocument(t *testing.T) {
	file := writeFile(t, "gemgate.yaml", "issuer: https://id.example\n---\n")
	if _, err := load("serve", []string{"--config", file}); err != nil {
		t.Errorf("a single document followed by a bare --- is refused: %v", err)
	}
}

// isScalar lets numbers and times through and fmt.Sprint re-spells them: a string setting
// does not get the text the file holds.
func TestConfigFileScalarTextIsKeptAsWritten(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"exchange_client_id: 0123", "0123"},
		{"exchange_client_id: 2001-12-14", "2001-12-14"},
		{"exchange_client_secret: 0x1F", "0x1F"},
	} {
		file := writeFile(t, "gemgate.yaml", "issuer: https://id.example\n"+tc.yaml+"\n")
		c, err := load("serve", []string{"--config", file})
		if err != nil {
			t.Errorf("%q refused: %v", tc.yaml, err)
			continue
		}
		got := c.ExchangeClientID + c.ExchangeSecret
		if got != tc.want {
			t.Errorf("%q became %q, not the text written (%q)", tc.yaml, got, tc.want)
		}
	}
}

// Two names the first version of the warning let by: a typo of required_scopes that starts
// like the names the test suite once used (GEMGATE_REQUIRE_…), and a setting of gemgate dev only (GEMGATE_TLS,
// GEMGATE_JSON, GEMGATE_DEV_ISSUER_LISTEN), which serve ignores.
func TestTyposTheTestNamesHideAreWarned(t *testing.T) {
	for name, want := range map[string]string{
		"GEMGATE_REQUIRE_SCOPES": "is not a gemgate setting",
		"GEMGATE_TLS":            "is a setting of gemgate dev only; serve ignores it",
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, "true")
			c := mustLoad(t, "--issuer", "https://id.example")
			for _, w := range c.warnings() {
				if strings.Contains(w.what, name+" "+want) {
					return
				}
			}
			t.Errorf("%s is not warned about (%q); warnings: %v", name, want, c.warnings())
		})
	}
}

// mcpPathPattern lets "." and ".." segments through. The resource URL then holds dot
// segments that every RFC 3986 / WHATWG client removes before sending, so clients reach
// another route: "/mcp/../healthz" passes reservedPath and is /healthz on the wire.
func TestMCPPathDotSegmentsAreRefused(t *testing.T) {
	for _, p := range []string{"/mcp/../healthz", "/x/../.well-known/oauth-protected-resource", "/."} {
		c := mustLoad(t, "--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--mcp-path", p)
		if strings.Contains(configErrors(c.validate()).Error(), "mcp_path") {
			continue
		}
		srv := buildServer(t, c)
		u, _ := url.Parse(srv.publicURL)
		sent := u.ResolveReference(&url.URL{Path: u.Path}) // what a client puts on the wire
		rec := httptest.NewRecorder()
		srv.gw.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, sent.String(), nil))
		t.Errorf("mcp_path %q validated: resource %s is sent as %s, which answers GET %d %q",
			p, srv.publicURL, sent.Path, rec.Code, strings.TrimSpace(rec.Body.String()))
	}
}

// The https rule is checked on exchange_token_url as configured, but not on the token
// endpoint found by discovery when exchange_token_url is left out (the default): an issuer
// document naming http://other-host/token (Keycloak behind a TLS proxy without its proxy
// setting does exactly this) gets gemgate's client secret and every caller's token in clear.
func TestDiscoveredTokenEndpointMustBeHTTPS(t *testing.T) {
	var iss string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "token_endpoint": "http://id.example/token",
			"jwks_uri": iss + "/certs", "authorization_endpoint": iss + "/auth"})
	}))
	defer srv.Close()
	iss = srv.URL
	t.Setenv("GEMGATE_EXCHANGE_CLIENT_SECRET", "s3cret")
	c := mustLoad(t, "--issuer", iss, "--worker-credential", "exchange", "--exchange-client-id", "gemgate",
		"--exchange-audience", "gemstone")
	if errs := c.validate(); len(errs) > 0 {
		t.Fatalf("setup: %v", configErrors(errs))
	}
	l, err := newLazyExchanger(c.Issuer, exchange.Config{ClientID: c.ExchangeClientID, ClientSecret: c.ExchangeSecret,
		Audience: c.ExchangeAudience}, c.AllowInsecure)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.exchanger(context.Background()); err == nil {
		t.Errorf("the discovered token endpoint http://id.example/token was accepted for token exchange (client secret and subject tokens over plain HTTP to another host)")
	}
}

// The same for the keys: jwks_url must be https, but the jwks_uri that discovery yields when
// jwks_url is left out is fetched over plain HTTP from any host, and its keys are trusted.
func TestDiscoveredJWKSURIMustBeHTTPS(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	b64 := func(n *big.Int) string { return base64.RawURLEncoding.EncodeToString(n.FillBytes(make([]byte, 32))) }
	var iss string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/certs" {
			json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]any{"kty": "EC", "crv": "P-256", "kid": "k1",
				"use": "sig", "alg": "ES256", "x": b64(key.X), "y": b64(key.Y)}}})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "jwks_uri": "http://keys.example/certs",
			"authorization_endpoint": iss + "/auth", "token_endpoint": iss + "/token"})
	}))
	defer srv.Close()
	iss = srv.URL
	// keys.example resolves, as DNS would for another host, to the test server.
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}}}
	c := mustLoad(t, "--issuer", iss)
	if errs := c.validate(); len(errs) > 0 {
		t.Fatalf("setup: %v", configErrors(errs))
	}
	v, err := auth.NewVerifier(context.Background(), auth.Config{Issuer: c.Issuer, JWKSURL: c.JWKSURL,
		Audiences: []string{"http://127.0.0.1:8080/mcp"}, HTTPClient: client})
	if err == nil {
		t.Errorf("signing keys were loaded from the discovered http://keys.example/certs (plain HTTP, another host): ready=%v", v.Ready(context.Background()) == nil)
	}
}

// private.Owned looks at .dev-issuer, key.pem and state.json but not at the folder they sit
// in: when the data directory can be written by others (no sticky bit), anyone can rename
// .dev-issuer away and put their own key in its place between the check and the read.
func TestDevStateInAWorldWritableParentIsRefused(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dataDir, 0o777); err != nil { // writable by all, not sticky
		t.Fatal(err)
	}
	if _, err := loadDevState(devStatePaths(dataDir)); err == nil {
		fi, _ := os.Stat(dataDir)
		t.Errorf("dev issuer state under %s (mode %v, others may rename .dev-issuer) was accepted", dataDir, fi.Mode().Perm())
	}
}
