package gemstone

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJwtKeysFindsTheJWKSOfAnIssuerWhoseURLIsNoJSON: gemstone-jwt-keys takes an issuer's URL
// or its JWKS URL. An issuer whose own URL answers 404 or a page that is not JSON (gemgate
// dev's, gemgate issuer's, most issuers but Keycloak's realm URL) is found through its discovery
// document; and one whose discovery cannot be read gets one line saying what was tried, not a
// Python traceback.
func TestJwtKeysFindsTheJWKSOfAnIssuerWhoseURLIsNoJSON(t *testing.T) {
	s := newStone(t, nil)
	issuer := &jwks{}
	issuer.add(t, "k1")
	for _, root := range []struct {
		name  string
		serve http.HandlerFunc
	}{
		{"404", http.NotFound},
		{"an HTML page", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("<html>issuer</html>")) }},
	} {
		mux := http.NewServeMux()
		mux.HandleFunc("/", root.serve)
		mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
			url := "http://" + r.Host
			w.Write([]byte(`{"issuer":"` + url + `","jwks_uri":"` + url + `/keys"}`))
		})
		mux.Handle("/keys", issuer)
		srv := httptest.NewServer(mux)
		out, err := dryRunKeys(t, s, srv.URL)
		srv.Close()
		if err != nil || !strings.Contains(out, "withId: 'k1'") {
			t.Errorf("an issuer whose URL answers %s: %v\n%s\nwant its key k1 found through its discovery document", root.name, err, out)
		}
	}

	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	out, err := dryRunKeys(t, s, srv.URL)
	if err == nil || strings.Contains(out, "Traceback") || !strings.Contains(out, "openid-configuration") {
		t.Errorf("an issuer with no JWKS and no discovery document: %v\n%s\nwant a failure naming what was tried, no traceback", err, out)
	}
}

// dryRunKeys runs gemstone-jwt-keys --dry-run against url: its output and stderr together.
func dryRunKeys(t *testing.T, s stone, url string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "scripts/gemstone-jwt-keys", "--dry-run", url)
	cmd.Env = append(os.Environ(), "TMPDIR="+keysTmp(t, s), "GEMGATE_JWT_KEYS_STATE="+filepath.Join(t.TempDir(), "state.json"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}
