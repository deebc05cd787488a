package auth

import (
	"context"
	"testing"
)

// TestCachedPrincipalIsNotShared: what Verify returns is the caller's to change; a cache
// hit must hand the next caller the token's own claims and scopes, not the last caller's
// edits.
func TestCachedPrincipalIsNotShared(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, nil)
	tok := token(t, kr.rsa1, iss.claims(clock.Now(), nil), nil)
	ctx := context.Background()

	first, err := v.Verify(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	first.Claims["preferred_username"] = "mallory"
	first.Claims["injected"] = true
	first.Scopes[0] = "admin"

	second, err := v.Verify(ctx, tok) // a cache hit
	if err != nil {
		t.Fatal(err)
	}
	if got := second.Claims["preferred_username"]; got != "alice" {
		t.Errorf("cached claim preferred_username = %v, want alice", got)
	}
	if _, ok := second.Claims["injected"]; ok {
		t.Error("a claim added by one caller appears for the next")
	}
	if second.Scopes[0] != "mcp:use" {
		t.Errorf("cached scopes = %v, want mcp:use first", second.Scopes)
	}
}

// TestPrincipalCloneKeepsNil: a principal without claims (auth none) clones to one
// without claims, not to an empty map.
func TestPrincipalCloneKeepsNil(t *testing.T) {
	if c := (Principal{User: "dev"}).clone(); c.Claims != nil || c.User != "dev" {
		t.Errorf("clone = %+v", c)
	}
}
