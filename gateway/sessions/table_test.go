package sessions

import (
	"errors"
	"testing"
)

// owner and session stand for the gateway's: who a session belongs to, and the session.
type owner struct{ issuer, subject string }

type session struct {
	id    string
	owner owner
}

func newTable(max, maxPerOwner int) *Table[owner, *session] {
	return NewTable(max, maxPerOwner, func(s *session) (string, owner) { return s.id, s.owner })
}

// TestTableReserve: the gateway's cap is reported before the user's; a released or removed
// slot is usable again; 0 is no cap.
func TestTableReserve(t *testing.T) {
	alice, bob := owner{"i", "alice"}, owner{"i", "bob"}
	type step struct {
		o    owner
		want error
	}
	tests := []struct {
		name          string
		max, maxOwner int
		steps         []step
	}{
		{"per user", 10, 2, []step{{alice, nil}, {alice, nil}, {alice, ErrUserFull}, {bob, nil}}},
		{"gateway", 2, 2, []step{{alice, nil}, {bob, nil}, {bob, ErrGatewayFull}, {alice, ErrGatewayFull}}},
		{"both reached: the gateway's", 2, 2, []step{{alice, nil}, {alice, nil}, {alice, ErrGatewayFull}}},
		{"no caps", 0, 0, []step{{alice, nil}, {alice, nil}, {alice, nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := newTable(tt.max, tt.maxOwner)
			for i, s := range tt.steps {
				if err := tb.Reserve(s.o); !errors.Is(err, s.want) || (err == nil) != (s.want == nil) {
					t.Fatalf("step %d (%s): reserve = %v, want %v", i, s.o.subject, err, s.want)
				}
			}
		})
	}
	tb := newTable(1, 1)
	if err := tb.Reserve(alice); err != nil {
		t.Fatal(err)
	}
	tb.Release(alice)
	if err := tb.Reserve(alice); err != nil {
		t.Errorf("a released slot is not free: %v", err)
	}
}

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
		if err := tb.Reserve(o); err != nil {
			return err
		}
		s := &session{id: id, owner: o}
		tb.Commit(s)
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
	if err := tb.Reserve(alice); !errors.Is(err, ErrUserFull) {
		t.Fatalf("a 4th session at a cap of 3: %v, want ErrUserFull", err)
	}

	// One of alice's three ends: two are left, so one more fits and no more.
	if !tb.Remove(open[0]) {
		t.Fatal("remove of an open session reported it gone")
	}
	if err := start(alice, "a4"); err != nil {
		t.Fatalf("a session in the slot an ended one gave back: %v", err)
	}
	if err := tb.Reserve(alice); !errors.Is(err, ErrUserFull) {
		t.Fatalf("with 3 sessions open after one ended, another was allowed (%v): the cap forgot the sessions left", err)
	}

	// A reservation given back (a session that never opened) gives back its own slot only.
	if !tb.Remove(open[1]) {
		t.Fatal("remove of an open session reported it gone")
	}
	if err := tb.Reserve(alice); err != nil {
		t.Fatalf("reserve after an end: %v", err)
	}
	tb.Release(alice)
	if err := start(alice, "a5"); err != nil {
		t.Fatalf("a session in the slot a released reservation gave back: %v", err)
	}
	if err := tb.Reserve(alice); !errors.Is(err, ErrUserFull) {
		t.Fatalf("after an end and a release, alice holds 3 and got a 4th (%v)", err)
	}

	// Removing the same session twice gives back nothing the second time.
	if tb.Remove(open[0]) {
		t.Error("a session removed twice reported removed twice")
	}
	if err := tb.Reserve(alice); !errors.Is(err, ErrUserFull) {
		t.Fatalf("a second remove of one session freed a slot: %v", err)
	}

	// Bob was never affected, and once alice's sessions all end she holds nothing.
	tb.mu.Lock()
	if n := tb.perOwner[bob]; n != 1 {
		t.Errorf("bob counted %d sessions, want 1", n)
	}
	tb.mu.Unlock()
	for _, s := range open[2:] {
		if s.owner == alice && !tb.Remove(s) {
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

// TestTableGatewayCapCountsOpenSessions: the gateway's cap counts the sessions open plus
// those starting, each once: a reservation made visible (commit) stops counting as starting.
// With a cap of 3, three sessions open one after another, and a 4th is refused.
func TestTableGatewayCapCountsOpenSessions(t *testing.T) {
	tb := newTable(3, 0)
	for i, o := range []owner{{"i", "alice"}, {"i", "bob"}, {"i", "carol"}} {
		if err := tb.Reserve(o); err != nil {
			t.Fatalf("session %d of 3: %v", i+1, err)
		}
		tb.Commit(&session{id: o.subject, owner: o})
	}
	if err := tb.Reserve(owner{"i", "dave"}); !errors.Is(err, ErrGatewayFull) {
		t.Fatalf("a 4th session at a gateway cap of 3: %v, want ErrGatewayFull", err)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.reserved != 0 || len(tb.byID) != 3 {
		t.Errorf("reserved %d, open %d; want 0 and 3", tb.reserved, len(tb.byID))
	}
}

// TestTableLookupIsTheOwners: a session is found by its id for its owner only; another user
// who knows or guesses the id finds nothing, as for an id that was never issued, and a removed
// session is gone for its owner too.
func TestTableLookupIsTheOwners(t *testing.T) {
	alice, mallory := owner{"i", "alice"}, owner{"i", "mallory"}
	otherIssuer := owner{"j", "alice"} // the same subject at another issuer is another user
	tb := newTable(10, 10)
	if err := tb.Reserve(alice); err != nil {
		t.Fatal(err)
	}
	s := &session{id: "s1", owner: alice}
	tb.Commit(s)
	if got := tb.Lookup("s1", alice); got != s {
		t.Errorf("the owner's lookup = %v, want the session", got)
	}
	for _, o := range []owner{mallory, otherIssuer} {
		if got := tb.Lookup("s1", o); got != nil {
			t.Errorf("%v found alice's session", o)
		}
	}
	if got := tb.Lookup("s2", alice); got != nil {
		t.Errorf("an id never issued found %v", got)
	}
	tb.Remove(s)
	if got := tb.Lookup("s1", alice); got != nil {
		t.Errorf("a removed session is still found")
	}
}
