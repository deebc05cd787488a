package auth

import (
	"errors"
	"strings"
	"testing"
)

// sizedToken signs a good token padded to exactly n bytes, varying a pad claim and a pad
// header (base64url cannot make every length from the payload alone).
func sizedToken(t *testing.T, iss *testIssuer, clock *fakeClock, n int) string {
	t.Helper()
	k := keyring().ec256 // quick to sign, and its signatures are all one length
	base := len(token(t, k, iss.claims(clock.Now(), map[string]any{"pad": ""}), map[string]any{"x": ""}))
	for h := range 4 {
		for p := max(0, (n-base)*3/4-8); p < (n-base)*3/4+8; p++ {
			tok := token(t, k, iss.claims(clock.Now(), map[string]any{"pad": strings.Repeat("p", p)}), map[string]any{"x": strings.Repeat("h", h)})
			if len(tok) == n {
				return tok
			}
		}
	}
	t.Fatalf("no token of exactly %d bytes", n)
	return ""
}

// TestTokenSizeLimit: a token of exactly 16 KiB is verified; one byte more is refused as
// too large before any parsing.
func TestTokenSizeLimit(t *testing.T) {
	iss := newTestIssuer(t, keyring().ec256)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, func(c *Config) { c.CacheSize = -1 })
	if _, err := v.Verify(t.Context(), sizedToken(t, iss, clock, maxTokenBytes)); err != nil {
		t.Errorf("a token of exactly %d bytes: %v", maxTokenBytes, err)
	}
	_, err := v.Verify(t.Context(), sizedToken(t, iss, clock, maxTokenBytes+1))
	var me *MalformedTokenError
	if !errors.As(err, &me) || me.Reason != "larger than 16 KiB" {
		t.Errorf("a token of %d bytes: %v, want refused as larger than 16 KiB", maxTokenBytes+1, err)
	}
}
