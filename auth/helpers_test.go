package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

const testResource = "https://gw.example.com/mcp"

// signingKey is a private key the test issuer may sign with.
type signingKey struct {
	kid  string
	alg  jwa.SignatureAlgorithm
	priv crypto.Signer
	// publishAlg puts "alg" into the published JWK.
	publishAlg bool
}

func (k signingKey) public() crypto.PublicKey { return k.priv.Public() }

type testKeyring struct {
	rsa1, rsa2, rsa3, rsaOther, ps, ec256, ed signingKey
}

// keyring is generated once per test binary: RSA generation is slow under -race.
var keyring = sync.OnceValue(func() testKeyring {
	newRSA := func() *rsa.PrivateKey {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		return k
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return testKeyring{
		rsa1:     signingKey{kid: "k1", alg: jwa.RS256, priv: newRSA()},
		rsa2:     signingKey{kid: "k2", alg: jwa.RS256, priv: newRSA(), publishAlg: true},
		rsa3:     signingKey{kid: "k3", alg: jwa.RS256, priv: newRSA()},
		rsaOther: signingKey{kid: "k1", alg: jwa.RS256, priv: newRSA()}, // same kid as rsa1, never published
		ps:       signingKey{kid: "ps", alg: jwa.PS256, priv: newRSA()},
		ec256:    signingKey{kid: "ec", alg: jwa.ES256, priv: ec, publishAlg: true},
		ed:       signingKey{kid: "ed", alg: jwa.EdDSA, priv: ed},
	}
})

// testIssuer is an OIDC issuer, serving discovery and a JWKS, inside an http.RoundTripper:
// no sockets, so it also works inside a testing/synctest bubble. While down, every request
// fails. Its URL is a loopback one, each issuer's its own port.
type testIssuer struct {
	url         string
	handler     http.Handler
	mu          sync.Mutex
	jwks        []byte
	down        atomic.Bool
	discoveryOK atomic.Bool
	fetches     atomic.Int32
	discoveries atomic.Int32

	holdFetches atomic.Bool   // JWKS fetches wait until release is closed
	held        chan struct{} // one value per JWKS fetch that waits
	release     chan struct{}
}

var testIssuerPorts atomic.Int32

func newTestIssuer(t testing.TB, published ...signingKey) *testIssuer {
	t.Helper()
	iss := &testIssuer{url: fmt.Sprintf("http://127.0.0.1:%d", 20000+testIssuerPorts.Add(1)),
		held: make(chan struct{}, 100), release: make(chan struct{})}
	t.Cleanup(iss.unblock)
	iss.discoveryOK.Store(true)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		iss.discoveries.Add(1)
		if !iss.discoveryOK.Load() {
			http.Error(w, "starting up", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                 iss.url,
			"jwks_uri":               iss.url + "/jwks",
			"authorization_endpoint": iss.url + "/authorize",
			"token_endpoint":         iss.url + "/token",
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		iss.fetches.Add(1)
		if iss.holdFetches.Load() {
			iss.held <- struct{}{}
			select {
			case <-iss.release:
			case <-r.Context().Done():
				return
			}
		}
		iss.mu.Lock()
		body := iss.jwks
		iss.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	iss.handler = mux
	if len(published) == 0 {
		published = []signingKey{keyring().rsa1}
	}
	iss.publish(t, published...)
	return iss
}

func (iss *testIssuer) URL() string { return iss.url }

// unblock lets every held JWKS fetch answer, and the ones after it.
func (iss *testIssuer) unblock() {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	select {
	case <-iss.release:
	default:
		close(iss.release)
	}
}

// client reaches the issuer, and nothing else.
func (iss *testIssuer) client() *http.Client { return &http.Client{Transport: iss} }

func (iss *testIssuer) RoundTrip(r *http.Request) (*http.Response, error) {
	return serveInMemory(iss.handler, &iss.down, r)
}

// serveInMemory answers r with h, or fails as a refused connection while down is set.
func serveInMemory(h http.Handler, down *atomic.Bool, r *http.Request) (*http.Response, error) {
	if down.Load() {
		return nil, errors.New("connection refused")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// publish replaces the JWKS with the public halves of keys.
func (iss *testIssuer) publish(t testing.TB, keys ...signingKey) {
	t.Helper()
	set := jwk.NewSet()
	for _, k := range keys {
		j, err := jwk.FromRaw(k.public())
		if err != nil {
			t.Fatal(err)
		}
		_ = j.Set(jwk.KeyIDKey, k.kid)
		_ = j.Set(jwk.KeyUsageKey, "sig")
		if k.publishAlg {
			_ = j.Set(jwk.AlgorithmKey, k.alg)
		}
		_ = set.AddKey(j)
	}
	body, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	iss.setJWKS(body)
}

// setJWKS replaces the JWKS document.
func (iss *testIssuer) setJWKS(body []byte) {
	iss.mu.Lock()
	iss.jwks = body
	iss.mu.Unlock()
}

// claims returns a good claim set for the issuer at now; overrides replace
// entries, and a nil override deletes one.
func (iss *testIssuer) claims(now time.Time, overrides map[string]any) map[string]any {
	c := map[string]any{
		"iss":                iss.URL(),
		"aud":                testResource,
		"sub":                "user-123",
		"preferred_username": "alice",
		"scope":              "mcp:use mcp:write",
		"iat":                now.Unix(),
		"exp":                now.Add(time.Hour).Unix(),
		"roles":              []any{"admin", "dev"},
	}
	for k, v := range overrides {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}

// token signs claims with k; header entries are added to (or, when nil,
// removed from) the protected header {"alg","kid","typ"}.
func token(t testing.TB, k signingKey, claims any, header map[string]any) string {
	t.Helper()
	h := map[string]any{"alg": k.alg.String(), "kid": k.kid, "typ": "at+jwt"}
	for name, v := range header {
		if v == nil {
			delete(h, name)
			continue
		}
		h[name] = v
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return signRaw(t, h, payload, k.alg, k.priv)
}

// signRaw builds a compact JWS from an arbitrary header, signing with jwx.
func signRaw(t testing.TB, header map[string]any, payload []byte, alg jwa.SignatureAlgorithm, key any) string {
	t.Helper()
	hb, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	input := b64(hb) + "." + b64(payload)
	if alg == jwa.NoSignature {
		return input + "."
	}
	signer, err := jws.NewSigner(alg)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := signer.Sign([]byte(input), key)
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64(sig)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// newTestVerifier builds a verifier against iss. Tests that move the clock run in a
// testing/synctest bubble.
func newTestVerifier(t testing.TB, iss *testIssuer, mutate func(*Config)) *Verifier {
	t.Helper()
	cfg := Config{
		Issuer:     iss.URL(),
		Audiences:  []string{testResource, "gemgate-extra"},
		HTTPClient: iss.client(),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	v, err := NewVerifier(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// records is a slog.Handler keeping every record, for tests that read what was logged.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }

func (h *records) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

func (h *records) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h *records) WithGroup(string) slog.Handler { return h }

// find returns the records with message msg.
func (h *records) find(msg string) []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []slog.Record
	for _, r := range h.recs {
		if r.Message == msg {
			out = append(out, r)
		}
	}
	return out
}

func attr(r slog.Record, key string) slog.Value {
	var v slog.Value
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value
			return false
		}
		return true
	})
	return v
}

const testMetadataURL = "https://gw.example.com/.well-known/oauth-protected-resource/mcp"

// challengeParams parses one Bearer challenge with the Go SDK's client parser.
func challengeParams(t *testing.T, h http.Header) map[string]string {
	t.Helper()
	cs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	if err != nil {
		t.Fatalf("WWW-Authenticate %q: %v", h.Values("WWW-Authenticate"), err)
	}
	if len(cs) != 1 || cs[0].Scheme != "bearer" {
		t.Fatalf("WWW-Authenticate %q: want one Bearer challenge, got %+v", h.Values("WWW-Authenticate"), cs)
	}
	return cs[0].Params
}

type middlewareHarness struct {
	mw      http.Handler
	mu      sync.Mutex
	calls   int
	reasons []string
	last    Principal
}

func newMiddlewareHarness(v TokenVerifier) *middlewareHarness {
	h := &middlewareHarness{}
	a := NewAuthenticator(AuthenticatorOptions{
		Verifier:            v,
		ResourceMetadataURL: testMetadataURL,
		RequiredScopes:      []string{"mcp:use"},
		OnFailure: func(_ *http.Request, reason string) {
			h.mu.Lock()
			h.reasons = append(h.reasons, reason)
			h.mu.Unlock()
		},
	})
	h.mw = a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := PrincipalFrom(r.Context())
		if !ok {
			panic("no principal in context")
		}
		h.mu.Lock()
		h.calls++
		h.last = p
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	return h
}

func (h *middlewareHarness) serve(r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.mw.ServeHTTP(rec, r)
	return rec
}

func bearerRequest(tok string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
	r.Header.Set("Authorization", "Bearer "+tok)
	return r
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// verifierWithToken is a verifier with its cache, and a token it accepts.
func verifierWithToken(t *testing.T) (*Verifier, string) {
	t.Helper()
	iss := newTestIssuer(t)
	return newTestVerifier(t, iss, nil), token(t, keyring().rsa1, iss.claims(time.Now(), nil), nil)
}
