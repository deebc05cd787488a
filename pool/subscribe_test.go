package pool

import (
	"encoding/json"
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

// record asks the scripted worker what subscribe, unsubscribe and setLevel requests reached it.
func record(t *testing.T, s *session) string {
	t.Helper()
	return answer(t, s.tool(t, "record", map[string]any{}))
}

// notified is how many notifications of method c was delivered.
func notified(t *testing.T, c *fakeCaller, method string) int {
	t.Helper()
	n := 0
	for _, m := range c.deliveries(t) {
		if m.Method == method {
			n++
		}
	}
	return n
}

// resources/subscribe and unsubscribe are reference counted across one worker's callers: the
// worker hears the first subscribe and the last unsubscribe of a URI (a caller's detach
// included), and resources/updated reaches only the callers that subscribed to that URI.
func TestSubscriptionsAreCountedAcrossCallers(t *testing.T) {
	p := newTestPool(t, Settings{})
	a, b, c, d := attach(t, p, "alice", false, `{}`, newCaller(time.Time{})), attach(t, p, "alice", false, `{}`, newCaller(time.Time{})),
		attach(t, p, "alice", false, `{}`, newCaller(time.Time{})), attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	sub := func(s *session, method, uri string) {
		t.Helper()
		call, err := s.call(t, method, map[string]string{"uri": uri})
		if err != nil {
			t.Fatal(err)
		}
		if got := answer(t, call); got != `{}` {
			t.Fatalf("%s %s: %s", method, uri, got)
		}
	}
	sub(a, "resources/subscribe", "u1")
	sub(b, "resources/subscribe", "u1")
	answer(t, d.tool(t, "emit", map[string]any{"method": "notifications/resources/updated", "params": map[string]string{"uri": "u1"}}))
	for name, want := range map[*session]int{a: 1, b: 1, c: 0, d: 0} {
		if n := notified(t, name.c, "notifications/resources/updated"); n != want {
			t.Errorf("session %s got %d resources/updated, want %d", name.id.Session, n, want)
		}
	}
	sub(a, "resources/unsubscribe", "u1")
	if got := record(t, d); got != "subscribe u1" {
		t.Errorf("after one of two unsubscribes the worker heard %q", got)
	}
	sub(b, "resources/unsubscribe", "u1")
	sub(a, "resources/subscribe", "u2")
	sub(c, "resources/subscribe", "u2")
	c.m.Detach()
	if got := record(t, d); got != "subscribe u1,unsubscribe u1,subscribe u2" {
		t.Errorf("the worker heard %q", got)
	}
	a.m.Detach() // the last subscriber of u2 goes: gemgate unsubscribes on its behalf
	want := "subscribe u1,unsubscribe u1,subscribe u2,unsubscribe u2"
	eventually(t, "the worker hears the last unsubscribe", func() bool { return record(t, d) == want })
}

// A call that gemgate does not answer itself (nearly all of them) costs shareLocked nothing:
// the answer it gives to a shared subscription or level is made only when it is given.
func TestShareLockedAllocatesNothingForAPlainCall(t *testing.T) {
	s := &slot{}
	c := &Call{w: &wrk{}, clientID: json.RawMessage(`1`), msg: &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "tools/call"}}
	if n := testing.AllocsPerRun(100, func() {
		if s.shareLocked(c) != nil {
			t.Fatal("a tools/call was answered by the pool")
		}
	}); n != 0 {
		t.Errorf("shareLocked allocated %v times for a tools/call, want 0", n)
	}
}

// Attacks on a detach (member.go) racing the calls of the worker's other callers.

// TestLastUnsubscribeRacesANewSubscribe: the last subscriber of a URI lets it go (it
// detaches, or unsubscribes) while another caller of the same worker subscribes to it (a
// client that closes one session and opens another, say). Whatever the order, once both are
// done the worker must be subscribed exactly when gemgate counts a subscriber: here the new
// one, so the last thing the worker heard for the URI must be a subscribe. The decision to
// tell the worker is taken under the slot's lock, but the line is written after it is let go
// (tellAfterDetach's goroutine, or the unsubscribe's call), and the new caller's subscribe,
// decided just after as the URI's first, may be written before it: the worker then ends
// unsubscribed while gemgate counts the new caller, which hears no resources/updated again.
func TestLastUnsubscribeRacesANewSubscribe(t *testing.T) {
	for _, how := range []string{"detach", "unsubscribe"} {
		t.Run(how, func(t *testing.T) { lastUnsubscribeRacesANewSubscribe(t, how) })
	}
}

func lastUnsubscribeRacesANewSubscribe(t *testing.T, how string) {
	p := newTestPool(t, Settings{})
	probe := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	var uris []string
	for i := range 60 {
		uri := fmt.Sprintf("u%d", i)
		a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
		b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
		sub, err := a.call(t, "resources/subscribe", map[string]string{"uri": uri})
		if err != nil {
			t.Fatal(err)
		}
		answer(t, sub)
		var wg sync.WaitGroup
		var aunsub, bsub *Call
		var aerr, berr error
		if how == "detach" {
			wg.Go(a.m.Detach)
		} else {
			wg.Go(func() { aunsub, aerr = a.call(t, "resources/unsubscribe", map[string]string{"uri": uri}) })
		}
		wg.Go(func() { bsub, berr = b.call(t, "resources/subscribe", map[string]string{"uri": uri}) })
		wg.Wait()
		if aerr != nil || berr != nil {
			t.Fatal(aerr, berr)
		}
		if aunsub != nil {
			answer(t, aunsub)
		}
		if got := answer(t, bsub); got != `{}` {
			t.Fatalf("subscribe %s: %s", uri, got)
		}
		// What the worker heard of uri must end in a subscribe once gemgate is done telling
		// it: wait for that (the worker may hear more than one line for uri, in any order).
		eventually(t, "the worker subscribed to "+uri+" for the caller counted", func() bool {
			heard := heardOf(record(t, probe), uri)
			return heard[len(heard)-1] == "subscribe "+uri
		})
		a.m.Detach()
		uris = append(uris, uri)
	}
	// A late unsubscribe of a round may land after that round's check: by now it has.
	rec := record(t, probe)
	for _, uri := range uris {
		if heard := heardOf(rec, uri); heard[len(heard)-1] != "subscribe "+uri {
			t.Errorf("the worker heard %q for %s while gemgate counts a subscriber: it is unsubscribed", heard, uri)
		}
	}
}

// heardOf picks what the scripted worker heard for uri out of its record.
func heardOf(record, uri string) []string {
	var out []string
	for e := range strings.SplitSeq(record, ",") {
		if strings.HasSuffix(e, " "+uri) {
			out = append(out, e)
		}
	}
	return out
}

// TestRefusedSubscribesLeaveNothing: a URI is the client's choice, and the worker may refuse
// a subscribe to it (no such resource). A refused subscribe must leave no count and no record
// of a subscription the worker does not have, or a client that subscribes to many distinct
// URIs grows the worker's state without bound; nor may gemgate write the worker an
// unsubscribe of what it never subscribed to. A URI refused once can be subscribed again, and
// one accepted afterwards counts as usual.
func TestRefusedSubscribesLeaveNothing(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	probe := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	var heard []string
	for i := range 50 {
		uri := fmt.Sprintf("refused:%d", i)
		call, err := a.call(t, "resources/subscribe", map[string]string{"uri": uri})
		if err != nil {
			t.Fatal(err)
		}
		if got := <-call.Result(); !strings.Contains(string(got.Error), `"code":-32002`) {
			t.Fatalf("subscribe %s: want the worker's refusal, got %+v", uri, got)
		}
		heard = append(heard, "subscribe "+uri)
	}
	s := a.m.slot()
	s.mu.Lock()
	subs, told := len(s.w.subs), len(s.w.heard)
	s.mu.Unlock()
	if subs != 0 || told != 0 {
		t.Errorf("after 50 refused subscribes gemgate keeps %d counted and %d told URIs, want none", subs, told)
	}
	a.m.Detach() // nothing to unsubscribe on its behalf
	if got, want := record(t, probe), strings.Join(heard, ","); got != want {
		t.Errorf("the worker heard %q, want only the refused subscribes", got)
	}
	// The same client may try again, and a URI the worker accepts is counted as ever.
	call, err := probe.call(t, "resources/subscribe", map[string]string{"uri": "refused:0"})
	if err != nil {
		t.Fatal(err)
	}
	if got := <-call.Result(); got.Error == nil {
		t.Fatalf("subscribe refused:0 again: want the refusal, got %+v", got)
	}
	call, err = probe.call(t, "resources/subscribe", map[string]string{"uri": "u"})
	if err != nil {
		t.Fatal(err)
	}
	if got := answer(t, call); got != `{}` {
		t.Fatalf("subscribe u: %s", got)
	}
	s.mu.Lock()
	_, toldU := s.w.heard["u"]
	ok := len(s.w.subs["u"]) == 1 && toldU && len(s.w.heard) == 1
	s.mu.Unlock()
	if !ok {
		t.Error("an accepted subscribe after refused ones is not counted and recorded alone")
	}
}

// TestSubscribesWhileTheFirstIsUnansweredGetTheWorkersAnswer: callers of one worker
// subscribe to a URI whose first subscribe the worker has not answered yet. Whether the
// worker takes the URI is not known, so gemgate may not answer them itself (were they
// answered {} at once and the worker refused, gemgate would count subscribers of a
// subscription the worker does not have): each is written to the worker too and gets the
// worker's own answer. A refusal counts none of them; an acceptance counts them all, and the
// worker hears the last unsubscribe only.
func TestSubscribesWhileTheFirstIsUnansweredGetTheWorkersAnswer(t *testing.T) {
	for _, uri := range []string{"held:refused:x", "held:y"} {
		t.Run(uri, func(t *testing.T) {
			p := newTestPool(t, Settings{})
			a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			probe := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			first, err := a.call(t, "resources/subscribe", map[string]string{"uri": uri})
			if err != nil {
				t.Fatal(err)
			}
			second, err := b.call(t, "resources/subscribe", map[string]string{"uri": uri})
			if err != nil {
				t.Fatal(err)
			}
			// The worker has both once this answers: it reads its input in order.
			if heard := record(t, probe); heard != "subscribe "+uri+",subscribe "+uri {
				t.Fatalf("the worker heard %q", heard)
			}
			select {
			case got := <-second.Result():
				t.Fatalf("the second subscribe was answered %s before the worker answered it", got.Encode())
			default:
			}
			answer(t, probe.tool(t, "release", map[string]any{}))
			got1, got2 := <-first.Result(), <-second.Result()
			if string(got2.ID) != string(second.clientID) {
				t.Errorf("the second subscribe's answer has id %s, want its own %s", got2.ID, second.clientID)
			}
			s := a.m.slot()
			state := func() (counted int, told bool, pending int) {
				s.mu.Lock()
				defer s.mu.Unlock()
				return len(s.w.subs[uri]), s.w.heard[uri] != nil, len(s.w.subPending) + len(s.w.subPendingOf)
			}
			counted, told, pending := state()
			if pending != 0 {
				t.Errorf("%d subscribes still counted in flight", pending)
			}
			if uri == "held:y" {
				if got1.Error != nil || got2.Error != nil || counted != 2 || !told {
					t.Fatalf("accepted: answers %s and %s, %d counted, told %v; want both {}, 2 counted, told", got1.Encode(), got2.Encode(), counted, told)
				}
				// Two subscribers: the worker hears the second unsubscribe only.
				for _, s := range []*session{a, b} {
					c, err := s.call(t, "resources/unsubscribe", map[string]string{"uri": uri})
					if err != nil {
						t.Fatal(err)
					}
					answer(t, c)
				}
				want := "subscribe " + uri + ",subscribe " + uri + ",unsubscribe " + uri
				if heard := record(t, probe); heard != want {
					t.Errorf("the worker heard %q, want %q", heard, want)
				}
				return
			}
			for _, got := range []*jsonrpc.Message{got1, got2} {
				if !strings.Contains(string(got.Error), `"code":-32002`) {
					t.Errorf("refused: a caller was answered %s, want the worker's refusal", got.Encode())
				}
			}
			b.m.Detach() // nothing to unsubscribe on its behalf
			a.m.Detach()
			eventually(t, "nothing kept of the refused URI", func() bool {
				counted, told, _ := state()
				return counted == 0 && !told
			})
			if heard := record(t, probe); heard != "subscribe "+uri+",subscribe "+uri {
				t.Errorf("the worker heard %q, want the two refused subscribes", heard)
			}
		})
	}
}

// TestCancelledSubscribeIsUndone: a caller cancels its subscribe once the worker has it and
// before it answers. The worker may take it still, and nobody counts as subscribed: gemgate
// must unsubscribe it, and keep no record of the URI.
func TestCancelledSubscribeIsUndone(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	probe := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	call, err := a.call(t, "resources/subscribe", map[string]string{"uri": "held:z"})
	if err != nil {
		t.Fatal(err)
	}
	if heard := record(t, probe); heard != "subscribe held:z" {
		t.Fatalf("the worker heard %q", heard)
	}
	call.Cancel("the client cancelled")
	eventually(t, "the worker hears the cancelled subscribe undone", func() bool {
		return record(t, probe) == "subscribe held:z,unsubscribe held:z"
	})
	answer(t, probe.tool(t, "release", map[string]any{})) // its late answer changes nothing
	s := a.m.slot()
	s.mu.Lock()
	subs, told, pending := len(s.w.subs), len(s.w.heard), len(s.w.subPending)+len(s.w.subPendingOf)
	s.mu.Unlock()
	if subs+told+pending != 0 {
		t.Errorf("gemgate keeps %d counted, %d told and %d pending URIs, want none", subs, told, pending)
	}
}

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

// More attacks on shared subscriptions (subscribe.go): what a caller was told it is
// subscribed to must hold across the worker's restart and a step-up move, and gemgate's book
// of subscriptions (subs, subsOf, subPending, subPendingOf, heard) must stay self-consistent
// through cancels and detaches at any moment.

// subBookProblems checks the slot's worker's book of subscriptions against itself: subsOf
// is each caller's number of URIs in subs, no set is kept empty, only attached callers
// count, and subPend is the sum of subPendOf, every count positive.
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
	pend := map[string]int{}
	for k, n := range w.subPendingOf {
		if n <= 0 {
			out = append(out, fmt.Sprintf("subPendOf %d kept for %s", n, k.uri))
		}
		pend[k.uri] += n
	}
	for uri, n := range w.subPending {
		if n <= 0 || n != pend[uri] {
			out = append(out, fmt.Sprintf("subPending %d for %s, the callers' sum is %d", n, uri, pend[uri]))
		}
	}
	for uri, n := range pend {
		if w.subPending[uri] != n {
			out = append(out, fmt.Sprintf("subPending %d for %s, the callers' sum is %d", w.subPending[uri], uri, n))
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

// TestSubscriptionsOutliveAWorkerRestart: with on_worker_exit keep, a caller stays attached
// when its worker dies, and the next request starts a successor. It was answered {} to its
// subscribe and never unsubscribed: the successor must be subscribed for it and its
// resources/updated must reach it, or the client waits for updates that never come and has
// no way to learn why.
func TestSubscriptionsOutliveAWorkerRestart(t *testing.T) {
	p := newTestPool(t, Settings{OnWorkerExit: ExitKeep})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	if got := within(subCall(t, a, "subscribe", "u")); !isOK(got) {
		t.Fatalf("subscribe: %s", show(got))
	}
	pid := a.m.WorkerPid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the dead worker is out of service", func() bool { return a.m.WorkerPid() != pid })
	heard := lastHeard(t, a, "u") // starts the successor
	if a.m.WorkerPid() == pid || a.m.WorkerPid() == 0 {
		t.Fatalf("no successor: pid %d", a.m.WorkerPid())
	}
	if got := updatedFor(t, a, "u", a.c); !got[0] {
		t.Errorf("after the restart, resources/updated of u does not reach the caller answered {} to its subscribe")
	}
	if heard != "subscribe u" {
		t.Errorf("the successor last heard %q of u, want a subscribe: the caller still believes it is subscribed", heard)
	}
	if bad := subBookProblems(a.m.slot()); len(bad) > 0 {
		t.Errorf("the successor's book: %v", bad)
	}
}

// TestSubscriptionsFollowAStepUp: a read-only session subscribed to a URI (answered {}
// before the move, or while the move happened) steps up to its read-write worker. The
// session goes on, so its subscription must: the read-write worker must deliver its
// resources/updated. The read-only worker must let the URI go once nobody there wants it,
// and keep nothing for the session that left.
func TestSubscriptionsFollowAStepUp(t *testing.T) {
	for _, when := range []string{"answered before the move", "answered after the move"} {
		t.Run(when, func(t *testing.T) {
			p := newTestPool(t, Settings{WorkerPer: PerUser})
			a := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
			ro := attach(t, p, "alice", true, `{}`, newCaller(time.Time{})) // stays read-only
			uri := "m"
			if when == "answered after the move" {
				uri = "held:m"
			}
			sub := subCall(t, a, "subscribe", uri)
			if uri == "m" {
				if got := within(sub); !isOK(got) {
					t.Fatalf("subscribe: %s", show(got))
				}
			} else {
				eventually(t, "the worker reads the subscribe", func() bool { return lastHeard(t, ro, uri) == "subscribe "+uri })
			}
			roSlot := ro.m.slot()
			rw := a.id
			rw.ReadOnly = false
			if err := a.m.Move(t.Context(), rw); err != nil {
				t.Fatal(err)
			}
			a.id = rw
			if uri != "m" {
				answer(t, ro.tool(t, "release", map[string]any{}))
				if got := within(sub); !isOK(got) {
					t.Fatalf("the subscribe kept at the read-only worker: %s", show(got))
				}
			}
			// The read-only worker: nothing kept for the session that left, the URI let go.
			eventually(t, "the read-only worker settles", func() bool { return stateOf(ro, uri).in == 0 })
			eventually(t, "the read-only worker lets the URI go", func() bool {
				return lastHeard(t, ro, uri) == "unsubscribe "+uri
			})
			if st := stateOf(ro, uri); st.subs+st.heardURIs+st.in != 0 {
				t.Errorf("the read-only worker keeps %d counted, %d told, %d in-flight URIs", st.subs, st.heardURIs, st.in)
			}
			if bad := subBookProblems(roSlot); len(bad) > 0 {
				t.Errorf("the read-only worker's book: %v", bad)
			}
			// The read-write worker: the session was answered {} and never unsubscribed.
			if got := updatedFor(t, a, uri, a.c); !got[0] {
				t.Errorf("after the step-up, resources/updated of %s does not reach the session answered {} to its subscribe", uri)
			}
			if heard := lastHeard(t, a, uri); heard != "subscribe "+uri {
				t.Errorf("the read-write worker last heard %q of %s, want a subscribe", heard, uri)
			}
		})
	}
}

// TestSubscriptionBookUnderCancelsAndDetaches: callers subscribe and unsubscribe at random
// among URIs the worker holds, refuses, or accepts, one request at a time, cancelling some
// right after sending them and now and then detaching to come back as a new session, while
// the worker answers its held subscribes from time to time. Whatever the interleaving, every
// call not cancelled gets one answer with its own id; once everything settles the book is
// self-consistent, no session that left counts, each caller whose last request was answered
// counts exactly when that answer was a subscribe's {}, and the worker was last told to
// subscribe to a URI exactly when someone counts.
// With worker_concurrency 1 the subscribes wait in the queue behind tool calls, and are
// cancelled or dropped there.
func TestSubscriptionBookUnderCancelsAndDetaches(t *testing.T) {
	t.Run("at the worker", func(t *testing.T) {
		subscriptionBookUnderCancelsAndDetaches(t, Settings{}, []string{"held:s", "s", "refused:r", "held:refused:h"})
	})
	t.Run("queued", func(t *testing.T) {
		subscriptionBookUnderCancelsAndDetaches(t, Settings{Concurrency: 1}, []string{"s", "t", "refused:r"})
	})
}

func subscriptionBookUnderCancelsAndDetaches(t *testing.T, settings Settings, uris []string) {
	p := newTestPool(t, settings)
	probe := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	const callers, ops = 4, 40
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	stopReleasing := keepReleasing(t, probe)
	type final struct {
		s    *session
		want map[string]int // 1 subscribed, 0 not, -1 unknown (its last request was cancelled)
	}
	finals := make([]final, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), seed))
			s := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			want := map[string]int{}
			for range ops {
				if r.IntN(15) == 0 {
					s.m.Detach()
					s = attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
					want = map[string]int{}
					continue
				}
				uri, method := uris[r.IntN(len(uris))], "subscribe"
				if r.IntN(3) == 0 {
					method = "unsubscribe"
				}
				if settings.Concurrency > 0 && r.IntN(2) == 0 {
					s.tool(t, "wait", map[string]any{"ms": 1}) // not waited for: the subscribe queues behind it
				}
				c, err := s.call(t, "resources/"+method, map[string]string{"uri": uri})
				if err != nil {
					t.Errorf("%s %s: %v", method, uri, err)
					return
				}
				if r.IntN(4) == 0 {
					c.Cancel("the client gave up")
					want[uri] = -1
					continue
				}
				got := ownAnswer(t, c, method+" "+uri)
				if got == nil {
					return
				}
				want[uri] = 0
				if method == "subscribe" && got.Error == nil {
					want[uri] = 1
				}
			}
			finals[i] = final{s, want}
		})
	}
	wg.Wait()
	stopReleasing()
	if t.Failed() {
		return
	}
	if !release(t, probe) { // the last held subscribes, cancelled or not, are answered
		t.Fatal("release failed")
	}
	eventually(t, "nothing in flight", func() bool { return stateOf(probe, "").in == 0 })
	if bad := subBookProblems(probe.m.slot()); len(bad) > 0 {
		t.Errorf("the book: %v", bad)
	}
	for i, f := range finals {
		for _, uri := range uris {
			w, ok := f.want[uri]
			if !ok || w < 0 {
				continue
			}
			if got := stateOf(probe, uri).counted[f.s.m]; got != (w == 1) {
				t.Errorf("caller %d counts as subscribed to %s: %v, its last answer says %v", i, uri, got, w == 1)
			}
		}
	}
	waitWorkerMatchesCount(t, probe, uris)
	for _, uri := range uris {
		if st := stateOf(probe, uri); st.heard && len(st.counted) == 0 {
			t.Errorf("nobody counts for %s, yet gemgate records the worker as subscribed", uri)
		}
	}
}

// A client chooses the URIs it subscribes to, and gemgate keeps each: one session may be
// subscribed to at most MaxSubscriptionsPerCaller of them. One more is refused by gemgate,
// with a message that says why, and never reaches the worker; a URI it has already, or one
// after it lets another go, is taken; another session of the same worker has its own count;
// and a caller that goes leaves no count behind.
func TestSubscriptionsPerCallerAreBounded(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	probe := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	sub := func(s *session, method, uri string) string {
		t.Helper()
		call, err := s.call(t, method, map[string]string{"uri": uri})
		if err != nil {
			t.Fatal(err)
		}
		got := <-call.Result()
		if got.Error != nil {
			return string(got.Error)
		}
		return string(got.Result)
	}
	for i := range MaxSubscriptionsPerCaller {
		if got := sub(a, "resources/subscribe", fmt.Sprintf("u%d", i)); got != `{}` {
			t.Fatalf("subscribe %d: %s", i, got)
		}
	}
	heard := strings.Count(record(t, probe), "subscribe ")
	if got := sub(a, "resources/subscribe", "one-more"); !strings.Contains(got, "too many resource subscriptions") {
		t.Fatalf("subscription %d: %s, want refused", MaxSubscriptionsPerCaller+1, got)
	}
	if now := strings.Count(record(t, probe), "subscribe "); now != heard {
		t.Errorf("the refused subscribe reached the worker (%d lines, then %d)", heard, now)
	}
	if got := sub(a, "resources/subscribe", "u7"); got != `{}` {
		t.Errorf("a URI the session has already: %s", got)
	}
	if got := sub(b, "resources/subscribe", "one-more"); got != `{}` {
		t.Errorf("another session's first subscribe: %s", got)
	}
	if got := sub(a, "resources/unsubscribe", "u7"); got != `{}` {
		t.Fatalf("unsubscribe: %s", got)
	}
	if got := sub(a, "resources/subscribe", "one-more"); got != `{}` {
		t.Errorf("after letting one go: %s", got)
	}
	a.m.Detach()
	b.m.Detach()
	s := probe.m.slot()
	eventually(t, "no subscription left", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.w.subs) == 0 && len(s.w.subsOf) == 0
	})
}

// A subscribe or unsubscribe is counted by its params.uri as gemgate reads it, strictly.
// One whose URI gemgate cannot read as a string (params by position, a number, none) might
// be read otherwise by the worker: two callers asking for different things would then share
// one count, and the second be answered {} by gemgate for what the worker never heard. It is
// refused with -32602, never reaches the worker and counts nothing.
func TestUnreadableSubscribeURIIsRefused(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	for _, method := range []string{"resources/subscribe", "resources/unsubscribe"} {
		for _, params := range []string{`["u1"]`, `{"uri":5}`, `{"uri":null}`, `{}`, `{"uri":{"u":"u1"}}`} {
			id := json.RawMessage(`"x"`)
			c, err := a.m.Call(t.Context(), Request{Message: &jsonrpc.Message{ID: id, Method: method, Params: json.RawMessage(params)}, Identity: a.id})
			if err != nil {
				t.Fatal(err)
			}
			if got := within(c); got == nil || !strings.Contains(string(got.Error), "-32602") || string(got.ID) != `"x"` {
				t.Fatalf("%s %s: %s, want -32602 with its id", method, params, show(got))
			}
		}
	}
	if heard := record(t, a); heard != "" {
		t.Errorf("the worker heard %q", heard)
	}
	s := a.m.slot()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.w.subs)+len(s.w.subsOf)+len(s.w.subPending) != 0 {
		t.Errorf("gemgate counts %v", s.w.subs)
	}
}
