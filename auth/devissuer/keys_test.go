package devissuer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// With KeyFile, the key (and its key id) survive a restart, so a token minted before it is
// still one of this issuer's; without, every Start has a new key.
func TestKeyFileKeepsTheKeyAcrossStarts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "key.pem")
	first, err := Start(Options{Audience: testAudience, KeyFile: file})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := first.Mint("alice", []string{"mcp:use"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(first.URL(), "http://")
	jwks := string(first.key.jwks)
	first.Close()
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v (mode %v), want 0600", err, fi.Mode().Perm())
	}

	again := startIssuer(t, Options{KeyFile: file, Addr: addr})
	if string(again.key.jwks) != jwks {
		t.Errorf("the JWK Set changed across starts:\n%s\n%s", jwks, again.key.jwks)
	}
	if _, err := again.verifyOwn(tok); err != nil {
		t.Errorf("a token from before the restart: %v", err)
	}
	fresh := startIssuer(t, Options{})
	if string(fresh.key.jwks) == jwks {
		t.Error("an issuer without KeyFile reused the kept key")
	}
}

func TestKeyFileThatIsNotAKeyIsRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(file, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(Options{Audience: testAudience, KeyFile: file}); err == nil || !strings.Contains(err.Error(), "delete it") {
		t.Errorf("want a refusal that says how to recover, got %v", err)
	}
}

func TestFreshKeyEachStart(t *testing.T) {
	a, b := startIssuer(t, Options{}), startIssuer(t, Options{})
	if a.key.kid == b.key.kid || a.key.private.N.Cmp(b.key.private.N) == 0 {
		t.Error("two issuers share a signing key")
	}
	if a.key.private.N.BitLen() != 2048 {
		t.Errorf("key has %d bits, want 2048", a.key.private.N.BitLen())
	}
}

// TestVerifyOwnValidityWindow: a token of this issuer is good from its nbf second up to,
// not including, its exp second (RFC 7519 §4.1.4: "on or after" exp it must be refused).
// Each instant is a testing/synctest bubble, whose clock starts at one fixed instant.
func TestVerifyOwnValidityWindow(t *testing.T) {
	i := startIssuer(t, Options{})
	var tok string
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Second) // minted a second into the bubble's time, to check before it too
		var err error
		if tok, err = i.Mint("alice", []string{"mcp:use"}, time.Minute); err != nil {
			t.Fatal(err)
		}
	})
	tests := []struct {
		after time.Duration // since the mint
		ok    bool
	}{
		{-time.Second, false}, // before nbf
		{0, true},             // nbf itself
		{59 * time.Second, true},
		{59*time.Second + 999*time.Millisecond, true},
		{time.Minute, false}, // exp itself
		{time.Hour, false},
	}
	for _, tt := range tests {
		synctest.Test(t, func(t *testing.T) {
			time.Sleep(time.Second + tt.after)
			c, err := i.verifyOwn(tok)
			if (err == nil) != tt.ok {
				t.Errorf("verifyOwn at mint%+v = %v, want ok=%v", tt.after, err, tt.ok)
			}
			if err == nil && c.Subject != "alice" {
				t.Errorf("verifyOwn at mint%+v: subject %q, want alice", tt.after, c.Subject)
			}
			if err != nil && err != errForeignToken {
				t.Errorf("verifyOwn error %v, want errForeignToken", err)
			}
		})
	}
}
