package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
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

// testIssuer is an in-process OIDC issuer serving discovery and a JWKS.
type testIssuer struct {
	srv         *httptest.Server
	mu          sync.Mutex
	jwks        []byte
	discoveryOK atomic.Bool
	fetches     atomic.Int32
	discoveries atomic.Int32
}

func newTestIssuer(t testing.TB, published ...signingKey) *testIssuer {
	t.Helper()
	iss := &testIssuer{}
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
			"issuer":                 iss.srv.URL,
			"jwks_uri":               iss.srv.URL + "/jwks",
			"authorization_endpoint": iss.srv.URL + "/authorize",
			"token_endpoint":         iss.srv.URL + "/token",
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		iss.fetches.Add(1)
		iss.mu.Lock()
		body := iss.jwks
		iss.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	iss.srv = httptest.NewServer(mux)
	t.Cleanup(iss.srv.Close)
	if len(published) == 0 {
		published = []signingKey{keyring().rsa1}
	}
	iss.publish(t, published...)
	return iss
}

func (iss *testIssuer) URL() string { return iss.srv.URL }

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

func publicKeyPEM(t testing.TB, k signingKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.public())
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// fakeClock is the verifier's injected clock.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Now().Truncate(time.Second).UnixNano())
	return c
}
func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// newTestVerifier builds a verifier against iss with the fake clock.
func newTestVerifier(t testing.TB, iss *testIssuer, clock *fakeClock, mutate func(*Config)) *Verifier {
	t.Helper()
	cfg := Config{
		Issuer:     iss.URL(),
		Audiences:  []string{testResource, "gemgate-extra"},
		HTTPClient: iss.srv.Client(),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	v, err := newVerifier(context.Background(), cfg, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// countingKeySet is a static key set that counts lookups, so tests can tell
// a cache hit (no lookup) from a full verification.
type countingKeySet struct {
	keys    map[string]PublicKey
	lookups atomic.Int32
}

func (s *countingKeySet) Key(_ context.Context, kid string) (PublicKey, error) {
	s.lookups.Add(1)
	k, ok := s.keys[kid]
	if !ok {
		return PublicKey{}, errNoSuchKey
	}
	return k, nil
}
