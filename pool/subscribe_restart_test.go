package pool

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

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
	if bad := subBookProblems(a.m.s.Load()); len(bad) > 0 {
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
			roSlot := ro.m.s.Load()
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
	if bad := subBookProblems(probe.m.s.Load()); len(bad) > 0 {
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
	for i := range MaxSubscriptionsPerCaller {
		if got := subAnswer(t, a, "subscribe", fmt.Sprintf("u%d", i)); got != `{}` {
			t.Fatalf("subscribe %d: %s", i, got)
		}
	}
	heard := strings.Count(record(t, probe), "subscribe ")
	if got := subAnswer(t, a, "subscribe", "one-more"); !strings.Contains(got, "too many resource subscriptions") {
		t.Fatalf("subscription %d: %s, want refused", MaxSubscriptionsPerCaller+1, got)
	}
	if now := strings.Count(record(t, probe), "subscribe "); now != heard {
		t.Errorf("the refused subscribe reached the worker (%d lines, then %d)", heard, now)
	}
	if got := subAnswer(t, a, "subscribe", "u7"); got != `{}` {
		t.Errorf("a URI the session has already: %s", got)
	}
	if got := subAnswer(t, b, "subscribe", "one-more"); got != `{}` {
		t.Errorf("another session's first subscribe: %s", got)
	}
	if got := subAnswer(t, a, "unsubscribe", "u7"); got != `{}` {
		t.Fatalf("unsubscribe: %s", got)
	}
	if got := subAnswer(t, a, "subscribe", "one-more"); got != `{}` {
		t.Errorf("after letting one go: %s", got)
	}
	a.m.Detach()
	b.m.Detach()
	s := probe.m.s.Load()
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
	s := a.m.s.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.w.subs)+len(s.w.subsOf)+len(s.w.subPending) != 0 {
		t.Errorf("gemgate counts %v", s.w.subs)
	}
}
