package auth

import (
	"context"
	"strings"
	"testing"
)

// TestCachedPrincipalIsNotShared: what Verify returns is the caller's to change; a cache
// hit must hand the next caller the token's own scopes, not the last caller's edits. Its
// claims cannot be changed from outside the package (Claim reads them), so they are shared.
func TestCachedPrincipalIsNotShared(t *testing.T) {
	v, tok := verifierWithToken(t)
	ctx := context.Background()

	first, err := v.Verify(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	first.Scopes[0] = "admin"
	first.Scopes = append(first.Scopes, "mcp:write")

	second, err := v.Verify(ctx, tok) // a cache hit
	if err != nil {
		t.Fatal(err)
	}
	if got := second.Claims()["preferred_username"]; got != "alice" {
		t.Errorf("cached claim preferred_username = %v, want alice", got)
	}
	if _, ok := second.Claims()["injected"]; ok {
		t.Error("Claims holds a claim the token does not have")
	}
	if second.Scopes[0] != "mcp:use" {
		t.Errorf("cached scopes = %v, want mcp:use first", second.Scopes)
	}
}

// TestPrincipalCloneKeepsNil: a principal without claims (auth none) clones to one
// without claims, not to an empty map.
func TestPrincipalCloneKeepsNil(t *testing.T) {
	if c := (Principal{User: "dev"}).clone(); c.claims != nil || c.User != "dev" {
		t.Errorf("clone = %+v", c)
	}
	if _, ok := (Principal{User: "dev"}).Claims()["sub"]; ok {
		t.Error("a principal without claims has a claim")
	}
}

func TestPrincipalAudience(t *testing.T) {
	for _, tc := range []struct {
		aud  any
		want string
	}{
		{"a", "a"},
		{[]any{"a", "b"}, "a b"},
		{nil, ""},
	} {
		p := Principal{claims: map[string]any{}}
		if tc.aud != nil {
			p.claims["aud"] = tc.aud
		}
		if got := strings.Join(p.Audience(), " "); got != tc.want {
			t.Errorf("aud %v: %q, want %q", tc.aud, got, tc.want)
		}
	}
}
