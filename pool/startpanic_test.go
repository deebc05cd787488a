package pool

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemgate/gemgate/worker"
)

// panicOnceLauncher panics at its first launch and starts the test worker after that; a
// launch that comes while the first is held waits for it.
type panicOnceLauncher struct {
	launches atomic.Int32
	held     chan struct{} // closed to let the first launch panic
}

func (l *panicOnceLauncher) Launch(ctx context.Context, id worker.Identity) (worker.Launch, error) {
	if l.launches.Add(1) == 1 {
		<-l.held
		panic("the launcher failed")
	}
	return scriptLauncher{}.Launch(ctx, id)
}

// TestStartPanicLeavesTheSlotUsable: a worker start that panics (a launcher's bug, say)
// raises the panic on its caller and ends the start as a failed one. An attach that waited
// for that start gets an error instead of waiting for good, and the next attach starts the
// worker.
func TestStartPanicLeavesTheSlotUsable(t *testing.T) {
	l := &panicOnceLauncher{held: make(chan struct{})}
	p, err := New(Options{Settings: Settings{WorkerPer: PerUser}, Launcher: l, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	id := Identity{Issuer: "https://issuer.test", Subject: "sub-alice", User: "alice", Session: "s1"}
	params := json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}`)
	attachOnce := func() (panicked any, err error) {
		defer func() { panicked = recover() }()
		_, _, err = p.Attach(t.Context(), Attach{Identity: id, Caller: newCaller(time.Time{}), Params: params})
		return nil, err
	}
	var wg sync.WaitGroup
	var firstPanic any
	wg.Go(func() { firstPanic, _ = attachOnce() })
	eventually(t, "the first attach to be in its launch", func() bool { return l.launches.Load() > 0 })
	waited := make(chan error, 1)
	go func() { _, err := attachOnce(); waited <- err }()
	awaitStartWaiters(t, 1) // the second attach waits for the first one's start
	close(l.held)
	wg.Wait()
	if firstPanic == nil {
		t.Fatal("the launcher's panic did not reach the attach that started the worker")
	}
	select {
	case err := <-waited:
		if !errors.Is(err, errStartPanicked) {
			t.Fatalf("the attach that waited for the start: %v, want %v", err, errStartPanicked)
		}
	case <-time.After(waitFor):
		t.Fatal("the attach that waited for the start still waits")
	}
	if panicked, err := attachOnce(); err != nil || panicked != nil {
		t.Fatalf("the next attach: %v, %v; want the worker started", err, panicked)
	}
}
