package gateway

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/gateway/limit"
)

// TestTableUserCapCountsTheSessionsLeft: the per-user cap counts the sessions a user still
// has, not the ones ended. Ending one of a user's sessions gives back one slot, never more:
// with a cap of 3 and three open, one ended, one more fits and the next is refused. A count
// forgotten on the first end (while sessions remain) would let the user open a full cap again
// on top of the sessions still open, and again after each end.
func TestTableUserCapCountsTheSessionsLeft(t *testing.T) {
	alice, bob := owner{"i", "alice"}, owner{"i", "bob"}
	tb := newTable(100, 3)
	var open []*session
	start := func(o owner, id string) error {
		t.Helper()
		if err := tb.reserve(o); err != nil {
			return err
		}
		s := &session{id: id, owner: o}
		tb.commit(s)
		open = append(open, s)
		return nil
	}
	for _, id := range []string{"a1", "a2", "a3"} {
		if err := start(alice, id); err != nil {
			t.Fatalf("session %s within the cap: %v", id, err)
		}
	}
	if err := start(bob, "b1"); err != nil {
		t.Fatalf("bob's first session: %v", err)
	}
	if err := tb.reserve(alice); !errors.Is(err, errUserFull) {
		t.Fatalf("a 4th session at a cap of 3: %v, want errUserFull", err)
	}

	// One of alice's three ends: two are left, so one more fits and no more.
	if !tb.remove(open[0]) {
		t.Fatal("remove of an open session reported it gone")
	}
	if err := start(alice, "a4"); err != nil {
		t.Fatalf("a session in the slot an ended one gave back: %v", err)
	}
	if err := tb.reserve(alice); !errors.Is(err, errUserFull) {
		t.Fatalf("with 3 sessions open after one ended, another was allowed (%v): the cap forgot the sessions left", err)
	}

	// A reservation given back (a session that never opened) gives back its own slot only.
	if !tb.remove(open[1]) {
		t.Fatal("remove of an open session reported it gone")
	}
	if err := tb.reserve(alice); err != nil {
		t.Fatalf("reserve after an end: %v", err)
	}
	tb.release(alice)
	if err := start(alice, "a5"); err != nil {
		t.Fatalf("a session in the slot a released reservation gave back: %v", err)
	}
	if err := tb.reserve(alice); !errors.Is(err, errUserFull) {
		t.Fatalf("after an end and a release, alice holds 3 and got a 4th (%v)", err)
	}

	// Removing the same session twice gives back nothing the second time.
	if tb.remove(open[0]) {
		t.Error("a session removed twice reported removed twice")
	}
	if err := tb.reserve(alice); !errors.Is(err, errUserFull) {
		t.Fatalf("a second remove of one session freed a slot: %v", err)
	}

	// Bob was never affected, and once alice's sessions all end she holds nothing.
	tb.mu.Lock()
	if n := tb.perOwner[bob]; n != 1 {
		t.Errorf("bob counted %d sessions, want 1", n)
	}
	tb.mu.Unlock()
	for _, s := range open[2:] {
		if s.owner == alice && !tb.remove(s) {
			t.Fatalf("remove %s", s.id)
		}
	}
	tb.mu.Lock()
	_, kept := tb.perOwner[alice]
	tb.mu.Unlock()
	if kept {
		t.Error("a user with no session left still has an entry in the per-user count")
	}
}

// TestPerUserCapHoldsAfterASessionEnds replays the cap over HTTP: max_sessions_per_user 2,
// the gateway's cap far off. Two sessions, one ended by DELETE, one more: the next is 429,
// and so is the one after another end and reopen.
func TestPerUserCapHoldsAfterASessionEnds(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Limits = limit.Settings{MaxSessions: 50, MaxSessionsPerUser: 2, WorkerStartRate: limit.None}
	})
	a, b := f.client("alice-rw"), f.client("alice-rw")
	a.open()
	b.open()
	refusal(t, f.client("alice-rw").rpc(`"over-1"`, "initialize", initParams("2025-06-18")), http.StatusTooManyRequests, `"over-1"`)
	for round := range 2 {
		if r := a.request(context.Background(), http.MethodDelete, ""); r.status != http.StatusOK {
			t.Fatalf("round %d: DELETE: status %d", round, r.status)
		}
		a = f.client("alice-rw")
		a.open() // the slot the ended session gave back
		r := f.client("alice-rw").rpc(`"over-2"`, "initialize", initParams("2025-06-18"))
		if r.status != http.StatusTooManyRequests {
			t.Fatalf("round %d: alice holds 2 sessions at a cap of 2 after one of them ended, and a 3rd initialize got %d, want 429: the cap forgot the session still open", round, r.status)
		}
		refusal(t, r, http.StatusTooManyRequests, `"over-2"`)
	}
	if n := f.gw.sessions.len(); n != 2 {
		t.Errorf("%d sessions open, want 2", n)
	}
	// Another user is not counted against alice.
	f.client("bob-rw").open()
}

// TestTableGatewayCapCountsOpenSessions: the gateway's cap counts the sessions open plus
// those starting, each once: a reservation made visible (commit) stops counting as starting.
// With a cap of 3, three sessions open one after another, and a 4th is refused.
func TestTableGatewayCapCountsOpenSessions(t *testing.T) {
	tb := newTable(3, 0)
	for i, o := range []owner{{"i", "alice"}, {"i", "bob"}, {"i", "carol"}} {
		if err := tb.reserve(o); err != nil {
			t.Fatalf("session %d of 3: %v", i+1, err)
		}
		tb.commit(&session{id: o.subject, owner: o})
	}
	if err := tb.reserve(owner{"i", "dave"}); !errors.Is(err, errGatewayFull) {
		t.Fatalf("a 4th session at a gateway cap of 3: %v, want errGatewayFull", err)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.reserved != 0 || len(tb.byID) != 3 {
		t.Errorf("reserved %d, open %d; want 0 and 3", tb.reserved, len(tb.byID))
	}
}
