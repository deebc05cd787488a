package pool

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemgate/gemgate/worker"
)

// countingLauncher is scriptLauncher, counting the workers it starts.
type countingLauncher struct{ n *atomic.Int32 }

func (l countingLauncher) Launch(ctx context.Context, id worker.Identity) (worker.Launch, error) {
	l.n.Add(1)
	return scriptLauncher{}.Launch(ctx, id)
}

// With on_worker_exit: end (always so with worker_per: session), a worker's death ends its
// callers: a call that races the death is refused, and never starts a successor nobody will
// use. The race's window (the watcher has taken the worker out of service and cleared the
// slot's callers, but not yet let this one go) is recreated by hand: the caller is given its
// slot back after the let-go, as if that had not run yet.
func TestOnWorkerExitEndStartsNoSuccessor(t *testing.T) {
	for _, per := range []string{PerUser, PerSession} {
		t.Run(per, func(t *testing.T) {
			var launches atomic.Int32
			p, err := New(Options{Settings: Settings{WorkerPer: per, OnWorkerExit: ExitEnd}, Launcher: countingLauncher{&launches}, InitTimeout: waitFor})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			s := a.m.s.Load()
			answer(t, a.tool(t, "die", map[string]any{}))
			select {
			case <-a.c.detached:
			case <-time.After(waitFor):
				t.Fatal("the caller was not let go")
			}
			a.m.s.Store(s) // the let-go has not run yet
			if _, err := a.call(t, "tools/call", map[string]any{"name": "record"}); !errors.Is(err, ErrDetached) {
				t.Errorf("a call racing the death: %v, want ErrDetached", err)
			}
			if n := launches.Load(); n != 1 {
				t.Errorf("%d workers started, want 1: a call racing the death started a successor", n)
			}
		})
	}
}

// The other side of the race: the worker has died (its process is closing) but its watcher
// has not yet taken it out of service. A call of an attached caller then waits for the
// process to be gone; with on_worker_exit: end it must be refused rather than start the
// successor. The dead worker is a real exited process put in the slot's place by hand.
func TestOnWorkerExitEndCallWhileTheWorkerDies(t *testing.T) {
	var launches atomic.Int32
	p, err := New(Options{Settings: Settings{WorkerPer: PerUser, OnWorkerExit: ExitEnd}, Launcher: countingLauncher{&launches}, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	s := a.m.s.Load()
	dead, err := worker.Start(worker.Spec{Path: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	<-dead.Done()
	s.mu.Lock()
	live := s.w
	s.w = &wrk{proc: dead}
	s.mu.Unlock()
	t.Cleanup(func() { live.proc.Stop() })
	if _, err := a.call(t, "tools/call", map[string]any{"name": "record"}); !errors.Is(err, ErrDetached) {
		t.Errorf("a call while the worker dies: %v, want ErrDetached", err)
	}
	if n := launches.Load(); n != 1 {
		t.Errorf("%d workers started, want 1: a call while the worker died started a successor", n)
	}
}
