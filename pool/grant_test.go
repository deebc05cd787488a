package pool

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// A worker's grant is read back from its key as it was given: every scope and audience,
// sorted and without repeats, whatever they hold (a scope from scp may hold a space or a
// colon, a digit may start one).
func TestGrantValuesReadsBackGrantSet(t *testing.T) {
	for _, set := range [][]string{
		nil,
		{"mcp:use"},
		{"mcp:write", "mcp:use", "files:admin", "mcp:use"},
		{"a b", "12:x", "", "ü"},
	} {
		want := slices.Clone(set)
		slices.Sort(want)
		want = slices.Compact(want)
		if len(want) == 0 {
			want = nil
		}
		if got := grantValues(grantSet(set)); !slices.Equal(got, want) {
			t.Errorf("grantValues(grantSet(%q)) = %q, want %q", set, got, want)
		}
	}
}

// A member's grant is its worker's key's: the scope set of the token that started it, and
// nothing once detached.
func TestMemberGrantIsItsWorkers(t *testing.T) {
	var launches atomic.Int32
	p, err := New(Options{Launcher: countingLauncher{&launches}, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	id := Identity{Issuer: "https://issuer.test", Subject: "sub-a", User: "alice",
		Scopes: []string{"mcp:write", "files:admin", "mcp:use"}}
	m, _, err := p.Attach(t.Context(), Attach{Identity: id, Caller: newCaller(time.Time{}), Params: []byte(`{"protocolVersion":"2025-06-18","capabilities":{}}`)})
	if err != nil {
		t.Fatal(err)
	}
	scopes, audience, ok := m.Grant()
	if !ok || !slices.Equal(scopes, []string{"files:admin", "mcp:use", "mcp:write"}) || audience != nil {
		t.Errorf("Grant() = %q, %q, %v; want the token's scopes, no audience", scopes, audience, ok)
	}
	m.Detach()
	if _, _, ok := m.Grant(); ok {
		t.Error("a detached member still has a grant")
	}
}
