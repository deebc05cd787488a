package pool

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
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
	c := &Call{w: &wrk{}, out: jsonrpc.Message{ID: json.RawMessage(`1`), Method: "tools/call"}}
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
	s := a.m.s.Load()
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
			if string(got2.ID) != string(second.out.ID) {
				t.Errorf("the second subscribe's answer has id %s, want its own %s", got2.ID, second.out.ID)
			}
			s := a.m.s.Load()
			state := func() (counted int, told bool, pending int) {
				s.mu.Lock()
				defer s.mu.Unlock()
				return len(s.w.subs[uri]), s.w.heard[uri] != nil, len(s.w.subPending)
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
	s := a.m.s.Load()
	s.mu.Lock()
	subs, told, pending := len(s.w.subs), len(s.w.heard), len(s.w.subPending)
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

// subAnswer is the raw result, or error, of s's resources/<method> of uri.
func subAnswer(t *testing.T, s *session, method, uri string) string {
	t.Helper()
	m := within(subCall(t, s, method, uri))
	switch {
	case m == nil:
		t.Fatalf("%s %s: no answer within %v", method, uri, waitFor)
	case m.Error != nil:
		return string(m.Error)
	}
	return string(m.Result)
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
	sl := s.m.s.Load()
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
