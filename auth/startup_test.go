package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A gateway started while its issuer is down answers 503 with Retry-After to requests
// with a token (never 401: the token may be perfectly good), and verifies tokens once the
// issuer answers, without a restart.
func TestStartVerifierWhileIssuerIsDown(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	iss.discoveryOK.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := StartVerifier(ctx, Config{Issuer: iss.URL(), Audiences: []string{testResource}, HTTPClient: iss.srv.Client(), UserClaim: "preferred_username"})
	if err != nil {
		t.Fatalf("StartVerifier with the issuer down: %v", err)
	}
	tok := token(t, kr.rsa1, iss.claims(time.Now(), nil), nil)

	_, err = v.Verify(context.Background(), tok)
	var unavailable *KeysUnavailableError
	if !errors.As(err, &unavailable) || errors.Is(err, ErrInvalidToken) {
		t.Fatalf("Verify before keys: err = %v, want a KeysUnavailableError that is not ErrInvalidToken", err)
	}
	if err := v.Ready(context.Background()); !errors.Is(err, ErrKeysUnavailable) {
		t.Fatalf("Ready before keys = %v", err)
	}

	h := newMiddlewareHarness(v)
	rec := h.serve(bearerRequest(tok))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("with a token before keys: status %d, Retry-After %q; want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	if rec.Header().Get("WWW-Authenticate") != "" {
		t.Errorf("503 carries a challenge: %q", rec.Header().Get("WWW-Authenticate"))
	}
	if rec := h.serve(httptest.NewRequest("POST", "/mcp", nil)); rec.Code != http.StatusUnauthorized {
		t.Errorf("without a token before keys: status %d, want 401", rec.Code)
	}
	if rec := h.serve(bearerRequest("not-a-jwt")); rec.Code != http.StatusUnauthorized {
		t.Errorf("a malformed token before keys: status %d, want 401", rec.Code)
	}

	iss.discoveryOK.Store(true)
	deadline := time.Now().Add(30 * time.Second)
	for v.Ready(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("keys not loaded 30s after the issuer came up: %v", v.Ready(context.Background()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rec := h.serve(bearerRequest(tok)); rec.Code != http.StatusNoContent {
		t.Fatalf("after the issuer came up: status %d: %s", rec.Code, rec.Body)
	}
}

// The background loader stops with its context.
func TestStartVerifierStopsRetryingWithItsContext(t *testing.T) {
	iss := newTestIssuer(t)
	iss.discoveryOK.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	v, err := StartVerifier(ctx, Config{Issuer: iss.URL(), Audiences: []string{testResource}, HTTPClient: iss.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for iss.discoveries.Load() < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	ks := v.keys.(*remoteKeySet)
	for ks.fetching.Load() && time.Now().Before(deadline) { // an attempt already on the wire
		time.Sleep(10 * time.Millisecond)
	}
	n := iss.discoveries.Load()
	// Proving that nothing happens takes some waiting: a live loader, nudged, would retry
	// within loadNudgeGap.
	for range 3 {
		_ = v.Ready(context.Background())
		time.Sleep(loadNudgeGap / 2)
	}
	if got := iss.discoveries.Load(); got != n {
		t.Errorf("discoveries went from %d to %d after the context ended", n, got)
	}
}

func TestStartVerifierRefusesBadConfig(t *testing.T) {
	if _, err := StartVerifier(context.Background(), Config{}); err == nil {
		t.Fatal("no error for an empty config")
	}
}
