package devissuer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
