package gemstone

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// jwks serves a JWKS whose keys the test changes between runs, as an issuer rotating keys.
type jwks struct {
	mu   sync.Mutex
	keys []map[string]string
}

func (j *jwks) add(t *testing.T, kid string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	pt, _ := k.PublicKey.Bytes() // 0x04 || X || Y
	j.mu.Lock()
	j.keys = append(j.keys, map[string]string{"kty": "EC", "crv": "P-256", "use": "sig", "kid": kid, "x": enc(pt[1:33]), "y": enc(pt[33:])})
	j.mu.Unlock()
}

// retire stops publishing kid, as an issuer does at the end of a rotation.
func (j *jwks) retire(kid string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.keys = slices.DeleteFunc(j.keys, func(k map[string]string) bool { return k["kid"] == kid })
}

func (j *jwks) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	j.mu.Lock()
	defer j.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]any{"keys": j.keys})
}

// runKeysScript runs scripts/gemstone-jwt-keys against the fake stone: its exit status, and
// what it printed.
func runKeysScript(t *testing.T, s stone, adminINI, url string) (int, string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("scripts/gemstone-jwt-keys is Python 3, and no python3 is on PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "scripts/gemstone-jwt-keys", url)
	cmd.Env = append(os.Environ(), "GEMSTONE="+s.home, "GEMSTONE_GLOBAL_DIR="+s.global, "GEMGATE_GEMSTONE_ADMIN_INI="+adminINI,
		"GEMGATE_JWT_KEYS_STATE="+filepath.Join(filepath.Dir(s.global), "jwt-keys-state.json"), "TMPDIR="+keysTmp(t, s))
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("gemstone-jwt-keys did not finish: %s", out)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("gemstone-jwt-keys did not run: %v", err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// keysTmp is the temporary folder the script runs with, one per stone.
func keysTmp(t *testing.T, s stone) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(s.global), "tmp")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// registeredKeys is what the fake stone holds from System addJwtKey:withId:.
func registeredKeys(t *testing.T, s stone) []string {
	b, err := os.ReadFile(filepath.Join(s.global, "fakestone-jwt-keys.json"))
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	var keys map[string]string
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(keys))
}

// TestJwtKeysScriptReRuns: the script is meant to run after every stone start and from cron
// for rotations, so a re-run must register the new key even though the old one is already
// there (addJwtKey:withId: raises for a known id), and it must report failure from what topaz
// printed, since topaz can exit 0 through iferr.
func TestJwtKeysScriptReRuns(t *testing.T) {
	s := newStone(t, map[string]any{"iferr_exit": 0})
	admin := filepath.Join(t.TempDir(), "admin.ini")
	if err := os.WriteFile(admin, []byte("set gemstone gs64stone\nset user DataCurator\nset password swordfish\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	issuer := &jwks{}
	srv := httptest.NewServer(issuer)
	t.Cleanup(srv.Close)

	issuer.add(t, "k1")
	if code, out := runKeysScript(t, s, admin, srv.URL); code != 0 || !strings.Contains(out, "registered 1 key") {
		t.Fatalf("first run: exit %d\n%s", code, out)
	}
	issuer.add(t, "k2") // the issuer rotates: k1 stays published, k2 is new
	code, out := runKeysScript(t, s, admin, srv.URL)
	if got := registeredKeys(t, s); !slices.Equal(got, []string{"k1", "k2"}) {
		t.Errorf("after the re-run the stone holds %v, want k1 and k2\n%s", got, out)
	}
	if code != 0 || !strings.Contains(out, "registered 2 key") {
		t.Errorf("re-run: exit %d\n%s", code, out)
	}

	// A failure that topaz reports with exit status 0 (the stone is gone) is still a failure.
	os.Remove(filepath.Join(s.global, "locks", "gs64stone..LCK"))
	if code, out := runKeysScript(t, s, admin, srv.URL); code == 0 || strings.Contains(out, "registered") {
		t.Errorf("with no stone the script exited %d and said\n%s", code, out)
	}
}

// adminINI is the 0600 ini of the account gemstone-jwt-keys logs in as.
func adminINI(t *testing.T) string {
	t.Helper()
	admin := filepath.Join(t.TempDir(), "admin.ini")
	if err := os.WriteFile(admin, []byte("set gemstone gs64stone\nset user DataCurator\nset password swordfish\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return admin
}

// TestJwtKeysScriptRemovesRetiredKeys: a key the script registered and the issuer no longer
// publishes is removed, so it stops being trusted before the stone restarts; a key the script
// did not register stays. The PEM files and the command file do not outlive the run.
func TestJwtKeysScriptRemovesRetiredKeys(t *testing.T) {
	s := newStone(t, nil)
	admin := adminINI(t)
	writeJSON(t, filepath.Join(s.global, "fakestone-jwt-keys.json"), map[string]string{"theirs": "-----BEGIN PUBLIC KEY-----"})
	issuer := &jwks{}
	srv := httptest.NewServer(issuer)
	t.Cleanup(srv.Close)
	issuer.add(t, "k1")
	issuer.add(t, "k2")
	if code, out := runKeysScript(t, s, admin, srv.URL); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, out)
	}
	issuer.retire("k1")
	issuer.add(t, "k3")
	code, out := runKeysScript(t, s, admin, srv.URL)
	if got := registeredKeys(t, s); code != 0 || !slices.Equal(got, []string{"k2", "k3", "theirs"}) {
		t.Errorf("after k1 was retired the stone holds %v (exit %d), want k2, k3 and theirs\n%s", got, code, out)
	}
	if left, _ := os.ReadDir(keysTmp(t, s)); len(left) != 0 {
		t.Errorf("the script left %v in its temporary folder", left)
	}
}

// TestJwtKeysDryRunKeepsItsFilesAndSaysWhere: --dry-run prints the command file and keeps it,
// with the PEM files, where it says.
func TestJwtKeysDryRunKeepsItsFilesAndSaysWhere(t *testing.T) {
	s := newStone(t, nil)
	issuer := &jwks{}
	srv := httptest.NewServer(issuer)
	t.Cleanup(srv.Close)
	issuer.add(t, "k1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "scripts/gemstone-jwt-keys", "--dry-run", srv.URL)
	cmd.Env = append(os.Environ(), "TMPDIR="+keysTmp(t, s), "GEMGATE_JWT_KEYS_STATE="+filepath.Join(t.TempDir(), "state.json"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("--dry-run: %v\n%s", err, out)
	}
	left, _ := os.ReadDir(keysTmp(t, s))
	if len(left) != 1 || !strings.Contains(string(out), filepath.Join(keysTmp(t, s), left[0].Name())) || !strings.Contains(string(out), "System addJwtKey:") {
		t.Errorf("--dry-run left %v and said\n%s", left, out)
	}
}
