package auth

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwk"
)

// A discovery the issuer refuses with a large body fails with a short error: go-oidc quotes
// the body whole, and the error lands in a log line on every retry.
func TestDiscoveryErrorIsClipped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, strings.Repeat("x", 512<<10))
	}))
	defer srv.Close()
	_, err := discoverJWKSURL(context.Background(), srv.Client(), srv.URL, false)
	if err == nil {
		t.Fatal("discovery against a 500 succeeded")
	}
	if len(err.Error()) > 1024 {
		t.Errorf("discovery against a 500 with 512 KiB of body: an error of %d bytes, want one under 1 KiB", len(err.Error()))
	}
}

// The key set's "keys" is read in its exact case, as jwx and every issuer write it.
func TestJWKSKeysInExactCase(t *testing.T) {
	j, err := jwk.FromRaw(keyring().rsa1.public())
	if err != nil {
		t.Fatal(err)
	}
	_ = j.Set(jwk.KeyIDKey, "k1")
	key, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if _, err := parseJWKS([]byte(`{"keys":[`+string(key)+`]}`), log); err != nil {
		t.Fatalf(`a key set with "keys": %v`, err)
	}
	if _, err := parseJWKS([]byte(`{"KEYS":[`+string(key)+`]}`), log); err == nil {
		t.Error(`a key set with "KEYS" was read`)
	}
}
