package pool

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// A member's grant is its worker's key's: every scope and audience of the token that started
// it, each in its own list, sorted and without repeats, whatever they hold (a scope from scp
// may hold a space or a colon, a digit may start one), and nothing once detached. Two sets
// that would join to one string ("a b" and "a", "b") are two workers, each with its own grant.
// The token's own lists changed afterwards change no grant.
func TestMemberGrantIsItsWorkers(t *testing.T) {
	var launches atomic.Int32
	p, err := New(Options{Launcher: countingLauncher{&launches}, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	grants := []struct{ scopes, audience []string }{
		{nil, nil},
		{[]string{"mcp:write", "files:admin", "mcp:use"}, nil},
		{nil, []string{"https://gw.test/mcp"}},
		{[]string{"mcp:write", "mcp:use", "files:admin", "mcp:use"}, []string{"https://gw.test/mcp", "gemgate-extra", "https://gw.test/mcp"}},
		{[]string{"a b", "12:x", "", "ü"}, []string{"aud b", "12:y"}},
		{[]string{"a", "b", "12:x", "", "ü"}, []string{"aud b", "12:y"}},
		{[]string{"a", "b", "12:x", "", "ü"}, []string{"aud", "b", "12:y"}},
	}
	canonical := func(set []string) []string {
		set = slices.Compact(slices.Sorted(slices.Values(set)))
		if len(set) == 0 {
			return nil
		}
		return set
	}
	var members []*Member
	for i, g := range grants {
		wantScopes, wantAudience := canonical(g.scopes), canonical(g.audience)
		id := Identity{Issuer: "https://issuer.test", Subject: "sub-a", User: "alice",
			Scopes: slices.Clone(g.scopes), Audience: slices.Clone(g.audience)}
		m, _, err := p.Attach(t.Context(), Attach{Identity: id, Caller: newCaller(time.Time{}), Params: []byte(`{"protocolVersion":"2025-06-18","capabilities":{}}`)})
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, m)
		if n := launches.Load(); n != int32(i+1) {
			t.Fatalf("scopes %q, audience %q: %d workers started, want %d: a worker of its own", g.scopes, g.audience, n, i+1)
		}
		for j := range id.Scopes {
			id.Scopes[j] = "changed"
		}
		for j := range id.Audience {
			id.Audience[j] = "changed"
		}
		scopes, audience, ok := m.Grant()
		if !ok || !slices.Equal(scopes, wantScopes) || !slices.Equal(audience, wantAudience) ||
			(scopes == nil) != (wantScopes == nil) || (audience == nil) != (wantAudience == nil) {
			t.Errorf("scopes %q, audience %q: Grant() = %q, %q, %v; want %q, %q", g.scopes, g.audience, scopes, audience, ok, wantScopes, wantAudience)
		}
	}
	for _, m := range members {
		m.Detach()
		if _, _, ok := m.Grant(); ok {
			t.Error("a detached member still has a grant")
		}
	}
}
