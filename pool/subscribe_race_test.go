package pool

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

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
			if gotStale == nil || gotFresh == nil || string(gotFresh.ID) != string(fresh.out.ID) {
				t.Fatalf("answers: stale %s, fresh %s (want its id %s)", show(gotStale), show(gotFresh), fresh.out.ID)
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
	if string(got.ID) != string(c.out.ID) {
		t.Errorf("%s: answered with id %s, want %s", what, got.ID, c.out.ID)
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

// More attacks on shared subscriptions (subscribe.go): what a caller was told it is
// subscribed to must hold across the worker's restart and a step-up move, and gemgate's book
// of subscriptions (subs, subsOf, subPending, heard) must stay self-consistent
// through cancels and detaches at any moment.

// subBookProblems checks the slot's worker's book of subscriptions against itself: subsOf
// is each caller's number of URIs in subs, no set is kept empty, only attached callers
// count, and subPending keeps no empty set and no count that is not positive.
func subBookProblems(s *slot) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.w
	if w == nil {
		return nil
	}
	var out []string
	per := map[*Member]int{}
	for uri, subs := range w.subs {
		if len(subs) == 0 {
			out = append(out, "an empty set kept for "+uri)
		}
		for m, in := range subs {
			if !in {
				out = append(out, "a false entry for "+uri)
			}
			per[m]++
			if _, attached := s.members[m]; !attached {
				out = append(out, "a caller no longer attached counts for "+uri)
			}
		}
	}
	for m, n := range w.subsOf {
		if n != per[m] {
			out = append(out, fmt.Sprintf("subsOf says %d for a caller counted for %d URIs", n, per[m]))
		}
	}
	for m, n := range per {
		if w.subsOf[m] != n {
			out = append(out, fmt.Sprintf("a caller counted for %d URIs has subsOf %d", n, w.subsOf[m]))
		}
	}
	for uri, of := range w.subPending {
		if len(of) == 0 {
			out = append(out, "an empty pending set kept for "+uri)
		}
		for _, n := range of {
			if n <= 0 {
				out = append(out, fmt.Sprintf("subPending %d kept for %s", n, uri))
			}
		}
	}
	return out
}

// updatedFor emits notifications/resources/updated of uri from s's worker and reports
// whether each caller got it. The worker writes the notification before the tool's answer,
// and gemgate delivers in the order it reads: once the answer is in, so is the notification.
func updatedFor(t *testing.T, s *session, uri string, callers ...*fakeCaller) []bool {
	t.Helper()
	before := make([]int, len(callers))
	for i, c := range callers {
		before[i] = notified(t, c, "notifications/resources/updated")
	}
	answer(t, s.tool(t, "emit", map[string]any{"method": "notifications/resources/updated", "params": map[string]string{"uri": uri}}))
	got := make([]bool, len(callers))
	for i, c := range callers {
		got[i] = notified(t, c, "notifications/resources/updated") > before[i]
	}
	return got
}
