package pool

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDetachWithAQueuedFirstSubscribeStrandsNoOne: with worker_concurrency, a URI's first
// subscribe may wait in the queue, and another caller's subscribe to it with it. When the
// first's caller detaches, its queued call is dropped (answered sessionEnded), and its
// bookkeeping must end with it: the other subscribe is answered, a later one too, nothing
// stays counted in flight, and the worker is subscribed when anyone counts.
func TestDetachWithAQueuedFirstSubscribeStrandsNoOne(t *testing.T) {
	p := newTestPool(t, Settings{Concurrency: 1})
	hog := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	c := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	hold := hog.tool(t, "hold", map[string]any{}) // takes the worker's one turn
	first := subCall(t, a, "subscribe", "u")      // queued behind it
	other := subCall(t, b, "subscribe", "u")
	if got := answeredYet(other); got != nil {
		t.Fatalf("the second subscribe was answered %s before the first reached the worker", show(got))
	}
	a.m.Detach()
	if got := within(first); !isError(got) || !strings.Contains(string(got.Error), "sessionEnded") {
		t.Fatalf("the detached caller's queued subscribe: %s, want sessionEnded", show(got))
	}
	hold.Cancel("test done holding") // the queue may run now
	got := within(other)
	if got == nil {
		t.Errorf("the second subscribe, queued with a first whose caller detached, got no answer within %v", waitFor)
	}
	late := subCall(t, c, "subscribe", "u")
	if got := within(late); got == nil {
		t.Errorf("a later subscribe to the URI got no answer within %v", waitFor)
	}
	st := stateOf(b, "u")
	if st.in != 0 {
		t.Errorf("%d URIs still have a subscribe counted in flight; the worker runs nothing", st.in)
	}
	if len(st.counted) > 0 {
		if heard := lastHeard(t, b, "u"); heard != "subscribe u" {
			t.Errorf("%d callers count as subscribed to u, the worker heard %q last", len(st.counted), heard)
		}
	}
}

// TestDetachWithQueuedSubscribesLeavesNothing: a caller queues subscribes to URIs of its
// choosing behind a busy worker and detaches. Nobody wants those URIs: gemgate must keep
// nothing for them, or sessions that do this again and again grow the worker's state
// without bound.
func TestDetachWithQueuedSubscribesLeavesNothing(t *testing.T) {
	p := newTestPool(t, Settings{Concurrency: 1})
	hog := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	hold := hog.tool(t, "hold", map[string]any{})
	for round := range 3 {
		a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
		var calls []*Call
		for i := range 10 {
			calls = append(calls, subCall(t, a, "subscribe", fmt.Sprintf("x%d-%d", round, i)))
		}
		a.m.Detach()
		for _, c := range calls {
			if got := within(c); !isError(got) {
				t.Fatalf("a dropped subscribe: %s, want sessionEnded", show(got))
			}
		}
	}
	if st := stateOf(hog, ""); st.subs+st.heardURIs+st.in != 0 {
		t.Errorf("after 30 subscribes dropped unwritten gemgate keeps %d counted, %d told and %d in-flight URIs, want none", st.subs, st.heardURIs, st.in)
	}
	hold.Cancel("test done holding")
}

// TestClosingThePoolAnswersQueuedSubscribes: the pool closes (or a worker is stopped with
// calls queued) while a URI's first subscribe and another caller's wait in the queue: each
// must be answered an error, with its own id.
func TestClosingThePoolAnswersQueuedSubscribes(t *testing.T) {
	p := newTestPool(t, Settings{Concurrency: 1})
	hog := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	hog.tool(t, "hold", map[string]any{})
	first := subCall(t, a, "subscribe", "u")
	other := subCall(t, b, "subscribe", "u")
	p.Close()
	if got := within(first); !isError(got) {
		t.Errorf("the queued first subscribe at close: %s, want an error", show(got))
	}
	if got := within(other); !isError(got) || string(got.ID) != string(other.out.ID) {
		t.Errorf("the second at close: %s, want an error with its own id %s", show(got), other.out.ID)
	}
}

// TestWorkerDeathFailsEverySubscribeInFlight: the worker dies while a URI's first subscribe
// is at the worker, or still queued behind a busy worker (worker_concurrency), and other
// callers' subscribes to it wait too. The first fails with the worker's end; the others were
// never answered by any worker and must fail alike, with their own ids, rather than be told
// they are subscribed.
func TestWorkerDeathFailsEverySubscribeInFlight(t *testing.T) {
	for _, where := range []string{"at the worker", "queued"} {
		t.Run(where, func(t *testing.T) {
			settings, uri := Settings{}, "held:d"
			if where == "queued" {
				settings, uri = Settings{Concurrency: 1}, "d"
			}
			p := newTestPool(t, settings)
			hog := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			c := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			pid := hog.m.WorkerPid()
			hold := hog.tool(t, "hold", map[string]any{})
			first := subCall(t, a, "subscribe", uri)
			if where == "at the worker" {
				eventually(t, "the worker reads the first subscribe", func() bool {
					return lastHeard(t, hog, uri) == "subscribe "+uri
				})
			}
			others := []*Call{subCall(t, b, "subscribe", uri), subCall(t, c, "subscribe", uri)}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if got := within(hold); !isError(got) {
				t.Fatalf("the held call of the killed worker: %s", show(got))
			}
			if got := within(first); !isError(got) {
				t.Errorf("the first subscribe: %s, want the worker's end", show(got))
			}
			for i, r := range others {
				got := within(r)
				if !isError(got) || string(got.ID) != string(r.out.ID) {
					t.Errorf("other subscribe %d: %s, want an error with its own id %s", i, show(got), r.out.ID)
				}
			}
		})
	}
}

// TestGivenUpFirstSubscribeLeavesTheOthersToTheWorker: a URI's first subscribe is given up
// before the worker answers (its caller cancels it, or detaches; at the worker or still
// queued) while another caller's subscribe to it waits too. Whether the worker takes the
// subscription is still unknown (it may refuse it, and it was told to stop working on it):
// the other caller must not be told it is subscribed on the strength of an answer that never
// came. Here the worker refuses the URI: once it has answered and everything settled, a
// caller answered {} must count and the worker must be subscribed; a caller answered an
// error must not count.
func TestGivenUpFirstSubscribeLeavesTheOthersToTheWorker(t *testing.T) {
	for _, how := range []string{"cancel at the worker", "detach at the worker", "cancel in the queue"} {
		t.Run(how, func(t *testing.T) {
			settings, uri := Settings{}, "held:refused:g"
			queued := how == "cancel in the queue"
			if queued {
				settings, uri = Settings{Concurrency: 1}, "refused:g"
			}
			p := newTestPool(t, settings)
			hog := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			var hold *Call
			if queued {
				hold = hog.tool(t, "hold", map[string]any{})
			}
			first := subCall(t, a, "subscribe", uri)
			if !queued {
				eventually(t, "the worker reads the first subscribe", func() bool {
					return lastHeard(t, hog, uri) == "subscribe "+uri
				})
			}
			other := subCall(t, b, "subscribe", uri)
			if strings.HasPrefix(how, "detach") {
				a.m.Detach()
			} else {
				first.Cancel("the client cancelled")
			}
			if queued {
				hold.Cancel("test done holding")
			} else {
				answer(t, hog.tool(t, "release", map[string]any{})) // the worker refuses it now
			}
			got := within(other)
			if got == nil {
				t.Fatalf("the second subscribe got no answer within %v", waitFor)
			}
			// The worker has read every line gemgate wrote about uri once it answers this.
			heard := lastHeard(t, hog, uri)
			st := stateOf(b, uri)
			if isOK(got) {
				t.Errorf("the second subscribe was answered {} though the worker refuses %s (it heard %q last; b counted: %v)", uri, heard, st.counted[b.m])
			}
			if isError(got) && st.counted[b.m] {
				t.Errorf("the second subscribe was answered %s yet counts as subscribed", show(got))
			}
			if !st.counted[b.m] && st.heard {
				t.Errorf("nobody counts for %s, yet gemgate records the worker as subscribed", uri)
			}
		})
	}
}

// TestRetryOfACancelledSubscribeStaysSubscribed: a client sends the same subscribe twice (a
// retry) and cancels the first while the worker holds both. The retry is answered {}: the
// caller must then count as subscribed, and the worker be subscribed, once the worker has
// answered. Giving up the first must not take away the subscription the retry was granted.
func TestRetryOfACancelledSubscribeStaysSubscribed(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	probe := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	first := subCall(t, a, "subscribe", "held:own")
	eventually(t, "the worker reads the first subscribe", func() bool {
		return lastHeard(t, probe, "held:own") == "subscribe held:own"
	})
	retry := subCall(t, a, "subscribe", "held:own")
	first.Cancel("the client gave up on it")
	answer(t, probe.tool(t, "release", map[string]any{}))
	got := within(retry)
	if !isOK(got) {
		t.Fatalf("the retry: %s, want {} (the worker accepts the URI)", show(got))
	}
	// Whatever gemgate writes the worker about the URI after the cancel is written before the
	// probe's record is.
	eventually(t, "gemgate settles the URI", func() bool { return stateOf(a, "held:own").in == 0 })
	heard := lastHeard(t, probe, "held:own")
	if st := stateOf(a, "held:own"); !st.counted[a.m] || heard != "subscribe held:own" {
		t.Errorf("the retry was answered {}, yet the caller counts: %v, and the worker heard %q last", st.counted[a.m], heard)
	}
}

// TestSecondSubscribeOfADetachingCallerIsAnsweredAtTheDetach: a caller whose subscribe
// waits with another's unanswered one detaches. Its calls are answered sessionEnded at once,
// this one too, rather than wait for as long as the worker holds it. The first's caller
// stays subscribed alone.
func TestSecondSubscribeOfADetachingCallerIsAnsweredAtTheDetach(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	first := subCall(t, a, "subscribe", "held:r")
	eventually(t, "the worker reads the first subscribe", func() bool {
		return lastHeard(t, a, "held:r") == "subscribe held:r"
	})
	other := subCall(t, b, "subscribe", "held:r")
	b.m.Detach()
	got := within(other) // the worker still holds the first
	if got == nil || !strings.Contains(string(got.Error), "sessionEnded") {
		t.Errorf("the detached caller's subscribe: %s, want sessionEnded while the worker holds the first", show(got))
	}
	answer(t, a.tool(t, "release", map[string]any{}))
	if got := within(first); !isOK(got) {
		t.Fatalf("the first subscribe: %s", show(got))
	}
	// The detached caller's call is withdrawn off its detach (a goroutine): wait for it.
	eventually(t, "nothing in flight", func() bool { return stateOf(a, "held:r").in == 0 })
	st := stateOf(a, "held:r")
	if len(st.counted) != 1 || !st.counted[a.m] || !st.heard || st.in != 0 {
		t.Errorf("counted %v (want a alone), told %v, %d in flight", st.counted, st.heard, st.in)
	}
}

// TestCancelledSecondSubscribeDoesNotCount: a caller cancels its subscribe while it waits
// with another caller's unanswered one. A first subscribe cancelled is undone
// (TestCancelledSubscribeIsUndone); a second cancelled must not count either.
func TestCancelledSecondSubscribeDoesNotCount(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	first := subCall(t, a, "subscribe", "held:c")
	eventually(t, "the worker reads the first subscribe", func() bool {
		return lastHeard(t, a, "held:c") == "subscribe held:c"
	})
	other := subCall(t, b, "subscribe", "held:c")
	other.Cancel("the client cancelled")
	answer(t, a.tool(t, "release", map[string]any{}))
	if got := within(first); !isOK(got) {
		t.Fatalf("the first subscribe: %s", show(got))
	}
	if st := stateOf(a, "held:c"); st.counted[b.m] {
		t.Errorf("the caller that cancelled its second subscribe counts as subscribed: %v", st.counted)
	}
}
