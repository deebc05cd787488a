package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"testing"

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

// TestUsableKeyRSASize: an RSA key below 2048 bits is never used, whether the JWKS
// library hands it over as a pointer or as a value.
func TestUsableKeyRSASize(t *testing.T) {
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	big := keyring().rsa1.priv.(*rsa.PrivateKey)
	tests := []struct {
		name string
		raw  any
		ok   bool
	}{
		{"2048-bit pointer", &big.PublicKey, true},
		{"2048-bit value", big.PublicKey, true},
		{"1024-bit pointer", &small.PublicKey, false},
		{"1024-bit value", small.PublicKey, false},
		{"not a key", "rsa", false},
	}
	for _, tt := range tests {
		if _, ok := usableKey(tt.raw); ok != tt.ok {
			t.Errorf("usableKey(%s) ok = %v, want %v", tt.name, ok, tt.ok)
		}
	}
}
