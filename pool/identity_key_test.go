package pool

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// A worker acts as the user name and holds the scopes (and, with a credential mode, the
// token) of the identity that started it, so it is keyed on them: a second subject with the
// same user name, or a client of the same user with fewer scopes or other audiences, never
// lands in it. The same scope set in another order is the same worker.
func TestWorkerKeyHoldsWhatTheWorkerIsGiven(t *testing.T) {
	var launches atomic.Int32
	p, err := New(Options{Launcher: countingLauncher{&launches}, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	who := func(sub, user string, scopes ...string) Identity {
		return Identity{Issuer: "https://issuer.test", Subject: sub, User: user, Scopes: scopes}
	}
	aud := func(id Identity, audience ...string) Identity { id.Audience = audience; return id }
	for i, tc := range []struct {
		name     string
		id       Identity
		launches int32
	}{
		{"first client", who("sub-a", "alice", "mcp:use", "mcp:write", "files:admin"), 1},
		{"same scopes, other order", who("sub-a", "alice", "files:admin", "mcp:write", "mcp:use", "mcp:use"), 1},
		{"fewer scopes", who("sub-a", "alice", "mcp:use", "mcp:write"), 2},
		{"another subject, same name", who("sub-b", "alice", "mcp:use", "mcp:write"), 3},
		{"same subject, renamed", who("sub-a", "alice2", "mcp:use", "mcp:write"), 4},
		{"a scope holding a space is not two scopes", who("sub-a", "alice", "mcp:use mcp:write"), 5},
		{"another audience", aud(who("sub-a", "alice", "mcp:use", "mcp:write"), "https://a.test"), 6},
		{"two audiences", aud(who("sub-a", "alice", "mcp:use", "mcp:write"), "https://a.test", "https://b.test"), 7},
		{"same audiences, other order", aud(who("sub-a", "alice", "mcp:write", "mcp:use"), "https://b.test", "https://a.test"), 7},
	} {
		m, _, err := p.Attach(t.Context(), Attach{Identity: tc.id, Caller: newCaller(time.Time{}), Params: []byte(`{"protocolVersion":"2025-06-18","capabilities":{}}`)})
		if err != nil {
			t.Fatalf("%d %s: %v", i, tc.name, err)
		}
		if n := launches.Load(); n != tc.launches {
			t.Errorf("%s: %d workers started, want %d", tc.name, n, tc.launches)
		}
		m.Detach()
	}
}

// Only an identity of the slot's key may start or renew its worker: a later call of a
// session whose token grants another scope set must not restart the worker with that token's
// scopes and credential for the slot's other callers.
func TestWorkerRestartNeedsTheSlotsGrant(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser, OnWorkerExit: ExitKeep})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	answer(t, a.tool(t, "die", map[string]any{}))
	fewer := *a
	fewer.id.Scopes = []string{"mcp:use"}
	deadline := time.Now().Add(waitFor)
	for {
		_, err := fewer.call(t, "tools/call", map[string]any{"name": "record"})
		if errors.Is(err, ErrGrantMismatch) && errors.Is(err, ErrAccessMismatch) {
			break
		}
		if err == nil || time.Now().After(deadline) {
			t.Fatalf("a call with another scope set after the worker died: %v, want ErrGrantMismatch", err)
		}
		time.Sleep(10 * time.Millisecond) // the dead worker is being taken out of service
	}
	if c, err := a.call(t, "tools/call", map[string]any{"name": "record"}); err != nil {
		t.Fatalf("a call of the slot's own grant: %v", err)
	} else {
		answer(t, c)
	}
}
