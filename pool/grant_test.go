package pool

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// A member's grant is its worker's key's: every scope and audience of the token that started
// it, sorted and without repeats, whatever they hold (a scope from scp may hold a space or a
// colon, a digit may start one), and nothing once detached. Two sets that would join to one
// string ("a b" and "a", "b") are two workers, each with its own grant.
func TestMemberGrantIsItsWorkers(t *testing.T) {
	var launches atomic.Int32
	p, err := New(Options{Launcher: countingLauncher{&launches}, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	sets := [][]string{
		nil,
		{"mcp:use"},
		{"mcp:write", "mcp:use", "files:admin", "mcp:use"},
		{"a b", "12:x", "", "ü"},
		{"a", "b", "12:x", "", "ü"},
	}
	var members []*Member
	for i, set := range sets {
		want := slices.Clone(set)
		slices.Sort(want)
		want = slices.Compact(want)
		if len(want) == 0 {
			want = nil
		}
		id := Identity{Issuer: "https://issuer.test", Subject: "sub-a", User: "alice", Scopes: set, Audience: slices.Clone(set)}
		m, _, err := p.Attach(t.Context(), Attach{Identity: id, Caller: newCaller(time.Time{}), Params: []byte(`{"protocolVersion":"2025-06-18","capabilities":{}}`)})
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, m)
		if n := launches.Load(); n != int32(i+1) {
			t.Fatalf("set %q: %d workers started, want %d: a worker of its own", set, n, i+1)
		}
		scopes, audience, ok := m.Grant()
		if !ok || !slices.Equal(scopes, want) || !slices.Equal(audience, want) || (scopes == nil) != (want == nil) {
			t.Errorf("set %q: Grant() = %q, %q, %v; want %q for both", set, scopes, audience, ok, want)
		}
	}
	for _, m := range members {
		m.Detach()
		if _, _, ok := m.Grant(); ok {
			t.Error("a detached member still has a grant")
		}
	}
}
