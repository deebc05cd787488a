package pool

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// inFlightAgrees reports whether m's count of calls in flight equals the calls of m in its
// worker's calls set, as a detach would find them by looking through the set.
func inFlightAgrees(m *Member) (count int32, found int) {
	s, _ := m.current()
	if s == nil {
		return m.inFlight.Load(), 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil {
		for c := range s.w.calls {
			if c.m == m {
				found++
			}
		}
	}
	return m.inFlight.Load(), found
}

// A member's count of calls in flight follows its calls into the worker, out of the queue
// (worker_concurrency 1) and out again by answer, session end and worker exit; and a detach,
// which skips the search of the worker's calls while the count is 0, still ends the call the
// member had running there.
func TestInFlightCountFollowsCalls(t *testing.T) {
	p := newTestPool(t, Settings{Concurrency: 1})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Now()))
	b := attach(t, p, "alice", false, `{}`, newCaller(time.Now()))
	agree := func(what string, s *session, want int32) {
		t.Helper()
		eventually(t, what, func() bool {
			n, found := inFlightAgrees(s.m)
			return n == want && int(n) == found
		})
	}
	if got := answer(t, a.tool(t, "wait", map[string]any{"ms": 0})); got != "waited" {
		t.Fatalf("first call: %s", got)
	}
	agree("a, answered", a, 0)

	held := a.tool(t, "hold", nil)
	agree("a, holding the worker", a, 1)
	queued := b.tool(t, "wait", map[string]any{"ms": 300})
	agree("b, queued behind a", b, 0)

	a.m.Detach()
	if got := answer(t, held); !strings.Contains(got, "sessionEnded") {
		t.Fatalf("a's running call after a's detach: %s, want the session's end", got)
	}
	// Its call leaves the worker's set once the worker is told to stop it.
	eventually(t, "a's count, detached", func() bool { return a.m.inFlight.Load() == 0 })
	agree("b, running once a's call left", b, 1)
	if got := answer(t, queued); got != "waited" {
		t.Fatalf("b's queued call: %s", got)
	}
	agree("b, answered", b, 0)

	// The worker dies under a call it holds: a call the worker died on at once ("die") is in
	// the set only for the moment its exit takes to be seen, which polling can miss.
	dying := b.tool(t, "hold", nil)
	agree("b, its call in the worker", b, 1)
	if err := syscall.Kill(b.m.WorkerPid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if got := answer(t, dying); !strings.Contains(got, "workerExit") {
		t.Fatalf("the call its worker died on: %s", got)
	}
	agree("b, its worker gone", b, 0)
}
