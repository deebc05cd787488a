package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
)

// TestAlgorithmFitsKey: every ECDSA algorithm names its one curve (RFC 7518 §3.4), so a
// token's alg cannot make gemgate use a key with another curve or of another type.
func TestAlgorithmFitsKey(t *testing.T) {
	ec := func(c elliptic.Curve) PublicKey {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return PublicKey{Key: &k.PublicKey}
	}
	p256, p384, p521 := ec(elliptic.P256()), ec(elliptic.P384()), ec(elliptic.P521())
	edPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ed := PublicKey{Key: edPub}
	rsaKey := PublicKey{Key: keyring().rsa1.public()}
	tests := []struct {
		alg  jwa.SignatureAlgorithm
		key  PublicKey
		name string
		ok   bool
	}{
		{jwa.ES256, p256, "P-256", true},
		{jwa.ES384, p384, "P-384", true},
		{jwa.ES512, p521, "P-521", true},
		{jwa.ES256, p384, "P-384", false},
		{jwa.ES384, p256, "P-256", false},
		{jwa.ES384, p521, "P-521", false},
		{jwa.ES512, p384, "P-384", false},
		{jwa.ES512, p256, "P-256", false},
		{jwa.EdDSA, ed, "Ed25519", true},
		{jwa.ES256, ed, "Ed25519", false},
		{jwa.EdDSA, p256, "P-256", false},
		{jwa.RS256, rsaKey, "RSA", true},
		{jwa.PS512, rsaKey, "RSA", true},
		{jwa.RS256, p256, "P-256", false},
		{jwa.ES256, rsaKey, "RSA", false},
		{jwa.EdDSA, rsaKey, "RSA", false},
	}
	for _, tt := range tests {
		if got := algorithmFitsKey(tt.alg, tt.key); got != tt.ok {
			t.Errorf("algorithmFitsKey(%s, %s key) = %v, want %v", tt.alg, tt.name, got, tt.ok)
		}
	}
}

// Only access tokens stand for a caller. The issuer signs other JWTs with the same keys: an
// ID, refresh, offline or logout token (Keycloak's "typ" claim says which), or a JWT whose
// header types it as another kind (a DPoP proof, a logout token, a security event). Given
// this resource's audience (a client named so, an audience mapper), each would otherwise
// verify like an access token.
func TestOnlyAccessTokensAreAccepted(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	v := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = -1 })
	ctx := context.Background()
	accepted := []struct {
		name   string
		claims map[string]any
		header map[string]any
	}{
		{"Keycloak access token", map[string]any{"typ": "Bearer"}, map[string]any{"typ": "JWT"}},
		{"RFC 9068", nil, map[string]any{"typ": "at+jwt"}},
		{"RFC 9068, media type", nil, map[string]any{"typ": "application/AT+JWT"}},
		{"no typ", nil, map[string]any{"typ": nil}},
		{"JOSE", nil, map[string]any{"typ": "JOSE"}},
	}
	for _, tc := range accepted {
		if _, err := v.Verify(ctx, token(t, kr.rsa1, iss.claims(time.Now(), tc.claims), tc.header)); err != nil {
			t.Errorf("%s: refused: %v", tc.name, err)
		}
	}
	refused := []struct {
		name   string
		claims map[string]any
		header map[string]any
	}{
		{"Keycloak ID token", map[string]any{"typ": "ID"}, map[string]any{"typ": "JWT"}},
		{"Keycloak refresh token", map[string]any{"typ": "Refresh"}, nil},
		{"Keycloak offline token", map[string]any{"typ": "Offline"}, nil},
		{"Keycloak logout token", map[string]any{"typ": "Logout"}, nil},
		{"DPoP-bound token", map[string]any{"typ": "DPoP", "cnf": map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}}, nil},
		{"certificate-bound token", map[string]any{"cnf": map[string]any{"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}}, nil},
		{"DPoP proof", nil, map[string]any{"typ": "dpop+jwt"}},
		{"back-channel logout token", nil, map[string]any{"typ": "logout+jwt"}},
		{"security event token", nil, map[string]any{"typ": "application/secevent+jwt"}},
		{"logout token with a parameter", nil, map[string]any{"typ": "logout+jwt; v=1"}},
		{"DPoP proof with white space", nil, map[string]any{"typ": " dpop+jwt "}},
	}
	for _, tc := range refused {
		_, err := v.Verify(ctx, token(t, kr.rsa1, iss.claims(time.Now(), tc.claims), tc.header))
		if !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s: %v, want an invalid token", tc.name, err)
		}
	}
}

// TestSignatureHasOneSpelling: jwx decodes base64 leniently (padding accepted, standard
// alphabet accepted, unused trailing bits ignored), so one signed token has many spellings
// that all verify. Anything keyed on the token's text (the cache, a revocation or replay
// list in front, a proxy hashing the Authorization header) sees different tokens where
// gemgate sees one. RFC 7515 §2: base64url without padding, and only that.
func TestSignatureHasOneSpelling(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	v := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = -1 })
	tok := token(t, kr.rsa1, iss.claims(time.Now(), nil), nil)
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("the canonical token: %v", err)
	}
	dot := strings.LastIndexByte(tok, '.')
	sig := tok[dot+1:]
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		t.Fatal(err)
	}
	// The last character carries 4 unused bits for a 256-byte signature: flip the lowest.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, sig[len(sig)-1])
	spare := sig[:len(sig)-1] + string(alphabet[last^1])
	variants := map[string]string{
		"padded signature":          tok + "==",
		"unused bits set":           tok[:dot+1] + spare,
		"standard alphabet, padded": tok[:dot+1] + base64.StdEncoding.EncodeToString(raw),
	}
	for name, alt := range variants {
		if alt == tok {
			continue
		}
		if _, err := v.Verify(context.Background(), alt); err == nil {
			t.Errorf("%s: another spelling of the same token verified", name)
		}
	}
}

// TestAcceptedAlgorithms: the algorithms gemgate verifies are exactly RFC 7518's asymmetric
// ones (DESIGN §4): each of them verifies a token signed with a key it fits, and a token
// with any other alg is refused as such before its key is looked up, whatever its kid: an
// HMAC keyed with the issuer's public key (the classic algorithm confusion), "none", an alg
// this build cannot verify. Looked up, a kid the issuer lacks would cost a fetch of the
// issuer's keys (one is due here) and be refused as an unknown key; a forged alg costs
// nothing. In a testing/synctest bubble, to be past the refresh interval at once.
func TestAcceptedAlgorithms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kr := keyring()
		ec := func(kid string, alg jwa.SignatureAlgorithm, c elliptic.Curve) signingKey {
			k, err := ecdsa.GenerateKey(c, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			return signingKey{kid: kid, alg: alg, priv: k}
		}
		ec384, ec521 := ec("ec384", jwa.ES384, elliptic.P384()), ec("ec521", jwa.ES512, elliptic.P521())
		iss := newTestIssuer(t, kr.rsa1, kr.ec256, ec384, ec521, kr.ed)
		v := newTestVerifier(t, iss, func(c *Config) { c.CacheSize = -1 })
		now := time.Now()
		claims := iss.claims(now, nil)
		as := func(k signingKey, alg jwa.SignatureAlgorithm) signingKey { k.alg = alg; return k }

		accepted := []signingKey{
			as(kr.rsa1, jwa.RS256), as(kr.rsa1, jwa.RS384), as(kr.rsa1, jwa.RS512),
			as(kr.rsa1, jwa.PS256), as(kr.rsa1, jwa.PS384), as(kr.rsa1, jwa.PS512),
			kr.ec256, ec384, ec521, kr.ed,
		}
		for _, k := range accepted {
			if _, err := v.Verify(context.Background(), token(t, k, claims, nil)); err != nil {
				t.Errorf("%s over key %s: %v, want accepted", k.alg, k.kid, err)
			}
		}
		if len(accepted) != len(acceptedAlgorithms) {
			t.Errorf("%d accepted algorithms tried, the list has %d", len(accepted), len(acceptedAlgorithms))
		}

		time.Sleep(DefaultKeyRefreshInterval) // an unknown kid may now fetch the keys again
		pem := publicKeyPEM(t, kr.rsa1)
		payload := mustJSON(t, claims)
		refused := []struct {
			alg jwa.SignatureAlgorithm
			key any
		}{
			{jwa.HS256, pem}, {jwa.HS384, pem}, {jwa.HS512, pem}, {jwa.NoSignature, nil},
			{"RS1", nil}, {"ES256K", nil},
		}
		for _, tt := range refused {
			for _, kid := range []string{"k1", "not-published", ""} {
				header := map[string]any{"alg": tt.alg.String(), "kid": kid, "typ": "at+jwt"}
				if kid == "" {
					delete(header, "kid")
				}
				var tok string
				if tt.key != nil || tt.alg == jwa.NoSignature {
					tok = signRaw(t, header, payload, tt.alg, tt.key)
				} else { // no signer for it: the signature of RS256, under another name
					good := token(t, kr.rsa1, claims, nil)
					hb := mustJSON(t, header)
					tok = b64(hb) + good[strings.IndexByte(good, '.'):]
				}
				_, err := v.Verify(context.Background(), tok)
				if got := FailureReason(err); got != ReasonAlgorithm {
					t.Errorf("alg %s, kid %q: FailureReason = %q, want %q", tt.alg, kid, got, ReasonAlgorithm)
				}
				if got := logAttr(RefusalLogAttrs(err), "token_alg"); got != tt.alg.String() {
					t.Errorf("alg %s, kid %q: token_alg %q logged", tt.alg, kid, got)
				}
			}
		}
		if got := iss.fetches.Load(); got != 1 {
			t.Errorf("fetches = %d, want 1 (at start): a token with a refused alg made gemgate fetch the issuer's keys", got)
		}
	})
}
