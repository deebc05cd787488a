package auth

import (
	"context"
	"encoding/json"
	"testing"
)

// TestJWKSKeyOfUnknownTypeIsSkipped: RFC 7517 §5 says a JWK Set reader SHOULD ignore keys
// whose kty it does not understand. jwk.Parse fails the whole set on one such key, so an
// issuer that adds a post-quantum signing key (kty "AKP", ML-DSA) or any other new key type
// next to its RSA key locks gemgate out: at start the keys never load (503 to every token,
// /readyz not ready); later every refresh fails, so the cached keys (withdrawn ones
// included) stay in use and tokens under a rotated-in kid are all refused.
func TestJWKSKeyOfUnknownTypeIsSkipped(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	iss.mu.Lock()
	var set map[string][]json.RawMessage
	if err := json.Unmarshal(iss.jwks, &set); err != nil {
		t.Fatal(err)
	}
	set["keys"] = append([]json.RawMessage{json.RawMessage(`{"kty":"AKP","alg":"ML-DSA-44","kid":"pq","use":"sig","pub":"AAAA"}`)}, set["keys"]...)
	iss.jwks, _ = json.Marshal(set)
	iss.mu.Unlock()

	clock := newFakeClock()
	v, err := newVerifier(context.Background(), Config{Issuer: iss.URL(), Audiences: []string{testResource}, HTTPClient: iss.srv.Client()}, clock.Now)
	if err != nil {
		t.Fatalf("a JWKS holding the issuer's RSA key and one key of a type gemgate does not know: %v", err)
	}
	if _, err := v.Verify(context.Background(), token(t, kr.rsa1, iss.claims(clock.Now(), nil), nil)); err != nil {
		t.Errorf("token signed with the known RSA key: %v", err)
	}
}
