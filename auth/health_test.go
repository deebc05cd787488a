package auth

import (
	"context"
	"testing"
)

// A token verified before its key was withdrawn must not live on in the cache.
func TestWithdrawnKeyEvictsCachedTokens(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1, kr.rsa2)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, nil)
	ctx := context.Background()
	old := token(t, kr.rsa1, iss.claims(clock.Now(), nil), nil)
	if _, err := v.Verify(ctx, old); err != nil {
		t.Fatal(err)
	}
	// The issuer withdraws k1; a token naming an unknown kid makes the gateway refetch.
	iss.publish(t, kr.rsa2, kr.rsa3)
	clock.advance(DefaultKeyRefreshInterval)
	if _, err := v.Verify(ctx, token(t, kr.rsa3, iss.claims(clock.Now(), nil), nil)); err != nil {
		t.Fatalf("new key: %v", err)
	}
	if _, err := v.Verify(ctx, old); err == nil {
		t.Fatal("a token signed by a withdrawn key was still accepted from the cache")
	}
}

func TestHealthReportsAnUnreachableIssuerButKeysStayInUse(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, nil)
	ctx := context.Background()
	if err := v.Health(ctx); err != nil {
		t.Fatalf("Health with a reachable issuer: %v", err)
	}
	iss.srv.Close()
	if err := v.Health(ctx); err != nil {
		t.Fatalf("Health fetched again at once: %v", err)
	}
	clock.advance(healthInterval)
	if err := v.Health(ctx); err == nil {
		t.Fatal("Health = nil with the issuer unreachable")
	}
	if err := v.Ready(ctx); err != nil {
		t.Errorf("Ready = %v; cached keys are still loaded", err)
	}
	if _, err := v.Verify(ctx, token(t, kr.rsa1, iss.claims(clock.Now(), nil), nil)); err != nil {
		t.Errorf("a token signed by a cached key: %v", err)
	}
}
