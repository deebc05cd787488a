package pool

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// Two sessions of one user open at once: the first request starts the worker (and its token
// exchange); the second waits for that start. The first client gives up (disconnects): the
// start goes on, since the second still waits for it, and the second gets the worker, not
// the first one's context.Canceled, which the gateway's attachError takes for "client gone"
// and answers with nothing at all. The first gets context.Canceled once the start is done.
func TestConcurrentAttachDoesNotInheritAnotherCallersCancel(t *testing.T) {
	l := &stallFirstLauncher{entered: make(chan struct{}), release: make(chan struct{})}
	p, err := New(Options{Settings: Settings{}, Launcher: l, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	params := json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}`)

	ctxA, cancelA := context.WithCancel(context.Background())
	aDone := make(chan error, 1)
	go func() {
		_, _, err := p.Attach(ctxA, Attach{Identity: userIdentity("alice", false, "token-A"), Caller: newCaller(time.Now()), Params: params})
		aDone <- err
	}()
	<-l.entered

	type result struct {
		m   *Member
		err error
	}
	bDone := make(chan result, 1)
	go func() {
		ctxB, cancelB := context.WithTimeout(context.Background(), waitFor)
		defer cancelB()
		m, _, err := p.Attach(ctxB, Attach{Identity: userIdentity("alice", false, "token-B"), Caller: newCaller(time.Now()), Params: params})
		bDone <- result{m, err}
	}()
	awaitStartWaiters(t, 1) // B waits on A's start
	cancelA()
	close(l.release)
	r := <-bDone
	if r.err != nil {
		t.Fatalf("second session of the user, whose client never left, failed with the first client's cancellation: %v (context.Canceled: %v)",
			r.err, errors.Is(r.err, context.Canceled))
	}
	r.m.Detach()
	if err := <-aDone; !errors.Is(err, context.Canceled) {
		t.Errorf("the attach whose client left: %v, want context.Canceled", err)
	}
	if n := len(l.launched()); n != 1 {
		t.Errorf("%d launches, want the one start both attaches shared", n)
	}
}

// A start whose only caller left goes on to its end, and leaves no worker that nobody
// attends: with worker_per: session it stops, with worker_per: user it ends when idle.
func TestStartWhoseCallerLeftLeavesNoWorker(t *testing.T) {
	for _, settings := range []Settings{{WorkerPer: PerSession}, {WorkerPer: PerUser, IdleTimeout: time.Millisecond}} {
		t.Run(settings.WorkerPer, func(t *testing.T) {
			l := &stallFirstLauncher{entered: make(chan struct{}), release: make(chan struct{})}
			p, err := New(Options{Settings: settings, Launcher: l, InitTimeout: waitFor})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, _, err := p.Attach(ctx, Attach{Identity: userIdentity("alice", false, "t"), Caller: newCaller(time.Now()), Params: json.RawMessage(`{}`)})
				done <- err
			}()
			<-l.entered
			cancel()
			close(l.release)
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("the attach whose client left: %v, want context.Canceled", err)
			}
			eventually(t, "the unattended worker to end", func() bool { return workers(p) == 0 })
		})
	}
}
