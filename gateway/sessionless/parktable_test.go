package sessionless

import (
	"fmt"
	"testing"
)

// TestParkTableEvictsTheUsersOldest: a user's parked calls up to maxParkedPerUser are kept; one
// more takes the place of that user's oldest (returned, for the caller to abandon), never of
// another user's. Past maxParkedTotal in all a call is refused.
func TestParkTableEvictsTheUsersOldest(t *testing.T) {
	var tb parkTable
	alice, bob := owner{"iss", "alice"}, owner{"iss", "bob"}
	park := func(o owner, id string) *parked {
		t.Helper()
		ev, err := tb.add(&parked{id: id, owner: o})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		return ev
	}
	park(bob, "b0")
	for i := range maxParkedPerUser {
		if ev := park(alice, fmt.Sprint("a", i)); ev != nil {
			t.Fatalf("a%d evicted %s below the bound", i, ev.id)
		}
	}
	if ev := park(alice, "a-new"); ev == nil || ev.id != "a0" {
		t.Fatalf("the %dth of alice's evicted %v, want her oldest a0", maxParkedPerUser+1, ev)
	}
	if tb.take("a0") != nil || tb.take("b0") == nil || tb.take("a-new") == nil {
		t.Error("after the eviction: a0 should be gone, b0 and a-new there")
	}
	if n := tb.byUser[alice]; n != maxParkedPerUser-1 {
		t.Errorf("alice has %d parked, want %d", n, maxParkedPerUser-1)
	}

	var full parkTable
	for i := range maxParkedTotal {
		if _, err := full.add(&parked{id: fmt.Sprint(i), owner: owner{"iss", fmt.Sprint("u", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := full.add(&parked{id: "over", owner: alice}); err != errTooManyParked {
		t.Errorf("past %d in all: %v, want errTooManyParked", maxParkedTotal, err)
	}
}
