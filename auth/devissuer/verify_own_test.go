package devissuer

import (
	"testing"
	"time"
)

// TestVerifyOwnValidityWindow: a token of this issuer is good from its nbf second up to,
// not including, its exp second (RFC 7519 §4.1.4: "on or after" exp it must be refused).
func TestVerifyOwnValidityWindow(t *testing.T) {
	i := startIssuer(t, Options{})
	minted := time.Unix(1_700_000_000, 0)
	i.now = func() time.Time { return minted }
	tok, err := i.Mint("alice", []string{"mcp:use"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		at time.Time
		ok bool
	}{
		{minted.Add(-time.Second), false}, // before nbf
		{minted, true},                    // nbf itself
		{minted.Add(59 * time.Second), true},
		{minted.Add(59*time.Second + 999*time.Millisecond), true},
		{minted.Add(time.Minute), false}, // exp itself
		{minted.Add(time.Hour), false},
	}
	for _, tt := range tests {
		i.now = func() time.Time { return tt.at }
		c, err := i.verifyOwn(tok)
		if (err == nil) != tt.ok {
			t.Errorf("verifyOwn at mint%+v = %v, want ok=%v", tt.at.Sub(minted), err, tt.ok)
		}
		if err == nil && c.Subject != "alice" {
			t.Errorf("verifyOwn at mint%+v: subject %q, want alice", tt.at.Sub(minted), c.Subject)
		}
		if err != nil && err != errForeignToken {
			t.Errorf("verifyOwn error %v, want errForeignToken", err)
		}
	}
}
