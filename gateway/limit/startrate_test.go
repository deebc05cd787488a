package limit

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestStartRate: a user gets the burst at once, then one start per 1/rate; a refusal says
// how long to wait and costs nothing; users do not share a bucket; refilled buckets are
// forgotten, so the map holds only recently active users.
func TestStartRate(t *testing.T) {
	// take is Take as (allowed, how long to wait).
	take := func(s *StartRate[string], who string, now time.Time) (bool, time.Duration) {
		t.Helper()
		err := s.Take(who, now)
		var re *RateError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("Take: %v, want a *RateError", err)
		}
		if err != nil {
			return false, re.Wait
		}
		return true, 0
	}
	s := NewStartRate[string](2, 3) // 3 at once, then one per 500ms
	t0 := time.Unix(1000, 0)
	for i := range 3 {
		if ok, _ := take(s, "alice", t0); !ok {
			t.Fatalf("start %d of the burst refused", i)
		}
	}
	ok, wait := take(s, "alice", t0)
	if ok || wait != 500*time.Millisecond {
		t.Errorf("over the burst: ok %v, wait %v; want refused, 500ms", ok, wait)
	}
	if ok, wait := take(s, "alice", t0.Add(100*time.Millisecond)); ok || wait != 400*time.Millisecond {
		t.Errorf("a refusal cost a start: ok %v, wait %v; want refused, 400ms", ok, wait)
	}
	if ok, _ := take(s, "bob", t0); !ok {
		t.Error("bob is limited by alice's starts")
	}
	if ok, _ := take(s, "alice", t0.Add(500*time.Millisecond)); !ok {
		t.Error("alice refused once a start had refilled")
	}
	if NewStartRate[string](0, 3) != nil || NewStartRate[string](None, 3) != nil {
		t.Error("a rate of 0 or less is not 'no limit'")
	}
	var none *StartRate[string]
	if ok, _ := take(none, "alice", t0); !ok {
		t.Error("no limiter refused")
	}

	// Many users, each starting once: the map does not keep those whose bucket refilled.
	s = NewStartRate[string](1, 1)
	for i := range 5 * minSweep {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond) // each user's bucket refills in 1s
		_ = s.Take(fmt.Sprint(i), at)
	}
	s.mu.Lock()
	n := len(s.buckets)
	s.mu.Unlock()
	if n > 2*minSweep {
		t.Errorf("%d buckets kept for %d users who started once each", n, 5*minSweep)
	}
}
