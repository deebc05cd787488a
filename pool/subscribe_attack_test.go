package pool

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// Attacks on the sharing of resources/subscribe and unsubscribe among one worker's callers
// (subscribe.go; call.go send, done, release): a subscribe to a URI whose first subscribe is
// unanswered is written too and gets the worker's own answer, and a subscribe or unsubscribe
// given up reconciles the worker's state. Once everything settles the worker must be
// subscribed to a URI exactly when an attached caller counts as subscribed, a caller counts only after a
// success, gemgate keeps nothing for a URI nobody wants, and every call gets one answer with
// its own id and never waits forever. The scripted worker (main_test.go) holds subscribes of
// "held:" URIs until its release tool and refuses URIs containing "refused:".

// subCall sends resources/<method> of uri for s.
func subCall(t *testing.T, s *session, method, uri string) *Call {
	t.Helper()
	c, err := s.call(t, "resources/"+method, map[string]string{"uri": uri})
	if err != nil {
		t.Fatalf("%s %s: %v", method, uri, err)
	}
	return c
}

// within is c's answer, or nil when none came within waitFor.
func within(c *Call) *jsonrpc.Message {
	select {
	case m := <-c.Result():
		return m
	case <-time.After(waitFor):
		return nil
	}
}

// answeredYet is c's answer if it has one already; it does not wait.
func answeredYet(c *Call) *jsonrpc.Message {
	select {
	case m := <-c.Result():
		return m
	default:
		return nil
	}
}

// subState is what gemgate keeps about subscriptions at a caller's worker.
type subState struct {
	counted             map[*Member]bool // the callers counted as subscribed to the URI asked about
	heard               bool             // the worker's last line of the URI asked about was a subscribe
	subs, heardURIs, in int              // URIs counted, heard subscribed and with a subscribe in flight
}

func stateOf(s *session, uri string) subState {
	sl := s.m.slot()
	if sl == nil {
		panic("stateOf: detached session")
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	w := sl.w
	st := subState{counted: map[*Member]bool{}}
	if w == nil {
		return st
	}
	for m := range w.subs[uri] {
		st.counted[m] = true
	}
	st.heard = w.heard[uri] != nil
	st.subs, st.heardURIs, st.in = len(w.subs), len(w.heard), len(w.subPending)
	return st
}

// lastHeard is the last subscribe or unsubscribe of uri the worker read, "" if none.
func lastHeard(t *testing.T, probe *session, uri string) string {
	t.Helper()
	heard := heardOf(record(t, probe), uri)
	if len(heard) == 0 {
		return ""
	}
	return heard[len(heard)-1]
}

func isError(m *jsonrpc.Message) bool { return m != nil && m.Error != nil }

func isOK(m *jsonrpc.Message) bool { return m != nil && m.Error == nil && string(m.Result) == `{}` }

func show(m *jsonrpc.Message) string {
	if m == nil {
		return "no answer"
	}
	return string(m.Encode())
}

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
	if got := within(other); !isError(got) || string(got.ID) != string(other.clientID) {
		t.Errorf("the second at close: %s, want an error with its own id %s", show(got), other.clientID)
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
				if !isError(got) || string(got.ID) != string(r.clientID) {
					t.Errorf("other subscribe %d: %s, want an error with its own id %s", i, show(got), r.clientID)
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

// TestSubscribesInFlightCountAgainstMaxCallsPerWorker: while a URI's first subscribe is
// unanswered, every further subscribe to it waits for the worker too, and max_calls_per_worker
// must bound them: a client that repeats one subscribe while the worker is slow must not grow
// what gemgate keeps without limit.
func TestSubscribesInFlightCountAgainstMaxCallsPerWorker(t *testing.T) {
	const limit = 4
	p := newTestPool(t, Settings{MaxCallsPerWorker: limit})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	first := subCall(t, a, "subscribe", "held:many")
	eventually(t, "the worker reads the first subscribe", func() bool {
		return lastHeard(t, a, "held:many") == "subscribe held:many"
	})
	var kept []*Call
	for range 3 * limit {
		c, err := a.call(t, "resources/subscribe", map[string]string{"uri": "held:many"})
		if errors.Is(err, ErrWorkerBusy) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, c)
	}
	if len(kept) >= limit {
		t.Errorf("%d subscribes wait on the first, beyond max_calls_per_worker %d", len(kept), limit)
	}
	for _, c := range kept { // room for the release
		c.Cancel("enough")
	}
	eventually(t, "the release gets a place", func() bool {
		c, err := a.call(t, "tools/call", map[string]any{"name": "release", "arguments": map[string]any{}})
		if errors.Is(err, ErrWorkerBusy) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		answer(t, c)
		return true
	})
	if got := within(first); !isOK(got) {
		t.Fatalf("the first subscribe: %s", show(got))
	}
	if st := stateOf(a, "held:many"); !st.counted[a.m] || !st.heard || st.in != 0 {
		t.Errorf("after the first was taken and the repeats cancelled: counted %v, told %v, %d in flight", st.counted[a.m], st.heard, st.in)
	}
}

// TestSharedSubscriptionsSettleConsistently: callers of one worker subscribe to and
// unsubscribe from URIs the worker holds, refuses, holds and then refuses, or accepts, each
// caller one request at a time (it waits for each answer) but all at once, while the worker
// answers its held subscribes from time to time. Whatever the interleaving, once everything
// settles each caller counts as subscribed exactly when its last answer for the URI was a
// subscribe's {}, the worker was last told to subscribe exactly when someone counts (and
// never, for a URI it refuses), and nothing is kept for a URI nobody wants.
func TestSharedSubscriptionsSettleConsistently(t *testing.T) {
	uris := []string{"held:s", "s", "refused:r", "held:refused:h"}
	p := newTestPool(t, Settings{})
	probe := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	const callers, ops = 4, 30
	sessions := make([]*session, callers)
	for i := range sessions {
		sessions[i] = attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	}
	want := make([]map[string]bool, callers) // by caller, by URI: subscribed after its last answer
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed) // the interleaving is the scheduler's; the choices can be replayed
	stopReleasing := keepReleasing(t, probe)
	var wg sync.WaitGroup
	for i, s := range sessions {
		want[i] = map[string]bool{}
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), seed))
			for range ops {
				uri, method := uris[r.IntN(len(uris))], "subscribe"
				if r.IntN(3) == 0 {
					method = "unsubscribe"
				}
				c, err := s.call(t, "resources/"+method, map[string]string{"uri": uri})
				if err != nil {
					t.Errorf("%s %s: %v", method, uri, err)
					return
				}
				got := ownAnswer(t, c, method+" "+uri)
				if got == nil {
					return
				}
				want[i][uri] = method == "subscribe" && got.Error == nil
				if strings.Contains(uri, "refused:") && method == "subscribe" && got.Error == nil {
					t.Errorf("subscribe %s was answered {}, the worker refuses it", uri)
				}
			}
		})
	}
	wg.Wait()
	stopReleasing()
	if t.Failed() {
		return
	}
	for i, s := range sessions {
		for _, uri := range uris {
			if got := stateOf(probe, uri).counted[s.m]; got != want[i][uri] {
				t.Errorf("caller %d counts as subscribed to %s: %v, want %v", i, uri, got, want[i][uri])
			}
		}
	}
	waitWorkerMatchesCount(t, probe, uris)
	st := stateOf(probe, "")
	counted := 0
	for _, uri := range uris {
		if len(stateOf(probe, uri).counted) > 0 {
			counted++
		}
	}
	if st.subs != counted || st.heardURIs > counted || st.in != 0 {
		t.Errorf("gemgate keeps %d counted, %d told and %d in-flight URIs; %d are wanted", st.subs, st.heardURIs, st.in, counted)
	}
}

// TestSubscribeAfterALetGoFirstIsItsOwn: a caller subscribes to a URI the worker holds and,
// without waiting, unsubscribes (the worker hears both); another caller then subscribes
// while the worker still holds the first. The count emptied in between, so the new
// subscribe is the URI's first again: it must be written to the worker and answered from
// its own answer, not the stale one's, and the stale one's late answer must neither count
// its caller nor clear the new first. With a URI the worker refuses, every subscribe
// fails and nothing is kept.
func TestSubscribeAfterALetGoFirstIsItsOwn(t *testing.T) {
	for _, uri := range []string{"held:p", "held:refused:p"} {
		t.Run(uri, func(t *testing.T) {
			p := newTestPool(t, Settings{})
			a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			stale := subCall(t, a, "subscribe", uri)
			unsub := subCall(t, a, "unsubscribe", uri)
			if got := within(unsub); got == nil {
				t.Fatal("the unsubscribe got no answer")
			}
			fresh := subCall(t, b, "subscribe", uri)
			eventually(t, "the worker reads the fresh subscribe", func() bool {
				return strings.Join(heardOf(record(t, a), uri), ",") == "subscribe "+uri+",unsubscribe "+uri+",subscribe "+uri
			})
			if got := answeredYet(fresh); got != nil {
				t.Fatalf("the fresh subscribe was answered %s before the worker answered it", show(got))
			}
			answer(t, a.tool(t, "release", map[string]any{}))
			gotStale, gotFresh := within(stale), within(fresh)
			if gotStale == nil || gotFresh == nil || string(gotFresh.ID) != string(fresh.clientID) {
				t.Fatalf("answers: stale %s, fresh %s (want its id %s)", show(gotStale), show(gotFresh), fresh.clientID)
			}
			st := stateOf(a, uri)
			if st.in != 0 || st.counted[a.m] {
				t.Errorf("%d URIs in flight, a counted %v; want none, false", st.in, st.counted[a.m])
			}
			if strings.Contains(uri, "refused:") {
				if !isError(gotStale) || !isError(gotFresh) || st.subs+st.heardURIs != 0 {
					t.Errorf("refused: stale %s, fresh %s, %d counted and %d told URIs kept", show(gotStale), show(gotFresh), st.subs, st.heardURIs)
				}
				return
			}
			if !isOK(gotFresh) || !st.counted[b.m] || !st.heard {
				t.Errorf("accepted: fresh %s, b counted %v, told %v; want {}, true, true", show(gotFresh), st.counted[b.m], st.heard)
			}
		})
	}
}

// waitWorkerMatchesCount waits until what the worker heard last of each URI agrees with the
// count: subscribed (and a URI it takes) exactly when someone counts. A reconcile may still
// be on its way to the worker.
func waitWorkerMatchesCount(t *testing.T, probe *session, uris []string) {
	t.Helper()
	eventually(t, "the worker's subscriptions match the count", func() bool {
		rec := record(t, probe)
		for _, uri := range uris {
			heard := heardOf(rec, uri)
			subscribed := len(heard) > 0 && heard[len(heard)-1] == "subscribe "+uri && !strings.Contains(uri, "refused:")
			if subscribed != (len(stateOf(probe, uri).counted) > 0) {
				return false
			}
		}
		return true
	})
}

// ownAnswer is c's answer, or nil (an error reported) when none came within waitFor; an
// answer with another id than c's is reported too.
func ownAnswer(t *testing.T, c *Call, what string) *jsonrpc.Message {
	t.Helper()
	got := within(c)
	if got == nil {
		t.Errorf("%s: no answer within %v", what, waitFor)
		return nil
	}
	if string(got.ID) != string(c.clientID) {
		t.Errorf("%s: answered with id %s, want %s", what, got.ID, c.clientID)
	}
	return got
}

// release has the script worker answer the subscribes it holds; it reports whether it could.
func release(t *testing.T, probe *session) bool {
	c, err := probe.call(t, "tools/call", map[string]any{"name": "release", "arguments": map[string]any{}})
	return err == nil && within(c) != nil
}

// keepReleasing releases the worker's held subscribes again and again until the function it
// returns is called (which waits for it to stop).
func keepReleasing(t *testing.T, probe *session) (stop func()) {
	done := make(chan struct{})
	var releaser sync.WaitGroup
	releaser.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if !release(t, probe) {
				t.Error("release failed")
				return
			}
		}
	})
	return func() {
		close(done)
		releaser.Wait()
	}
}
