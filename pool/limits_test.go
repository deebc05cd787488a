package pool

import (
	"errors"
	"testing"
	"time"
)

// max_workers caps the workers running at once: a start beyond it is refused with
// ErrTooManyWorkers (the gateway's 503), and a worker that ends frees its place.
func TestMaxWorkers(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerSession, MaxWorkers: 1})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	_, _, err := p.Attach(t.Context(), Attach{Identity: Identity{Session: "other"}, Caller: newCaller(time.Time{}), Params: a.m.params})
	if !errors.Is(err, ErrTooManyWorkers) {
		t.Fatalf("a second worker: %v, want ErrTooManyWorkers", err)
	}
	if n := workers(p); n != 1 {
		t.Errorf("%d workers, want 1", n)
	}
	a.m.Detach() // per session: its worker stops now
	eventually(t, "the first worker ends", func() bool { return workers(p) == 0 })
	attach(t, p, "bob", false, `{}`, newCaller(time.Time{}))
}

// max_calls_per_worker bounds the calls one worker holds, running and queued, across all of
// its callers: one more is refused with ErrWorkerBusy (the gateway's 429), another user's
// worker is not affected.
func TestMaxCallsPerWorker(t *testing.T) {
	cases := []struct {
		name        string
		concurrency int // 1: the second call waits in the queue, and still counts
	}{
		{"all running", 0},
		{"one running, one queued", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPool(t, Settings{MaxCallsPerWorker: 2, Concurrency: tc.concurrency})
			a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			a.tool(t, "hold", map[string]any{})
			b.tool(t, "hold", map[string]any{})
			if _, err := a.call(t, "tools/call", map[string]any{"name": "record"}); !errors.Is(err, ErrWorkerBusy) {
				t.Fatalf("a third call: %v, want ErrWorkerBusy", err)
			}
			bob := attach(t, p, "bob", false, `{}`, newCaller(time.Time{}))
			if got := answer(t, bob.tool(t, "record", map[string]any{})); got != "" {
				t.Errorf("bob's worker answered %q", got)
			}
		})
	}
}
