package pool

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// Two sessions of one user open at once: the first request starts the worker (and its token
// exchange) under its own context; the second waits for that start. The first client gives
// up (disconnects): the second, whose client is still there, must not get the first one's
// context.Canceled, which the gateway's attachError takes for "client gone" and answers with
// nothing at all. It starts the worker itself.
func TestConcurrentAttachDoesNotInheritAnotherCallersCancel(t *testing.T) {
	l := &stallFirstLauncher{entered: make(chan struct{})}
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
	time.Sleep(200 * time.Millisecond) // B waits on A's start
	cancelA()
	r := <-bDone
	if r.err != nil {
		t.Fatalf("second session of the user, whose client never left, failed with the first client's cancellation: %v (context.Canceled: %v)",
			r.err, errors.Is(r.err, context.Canceled))
	}
	r.m.Detach()
	if err := <-aDone; !errors.Is(err, context.Canceled) {
		t.Errorf("the attach whose client left: %v, want context.Canceled", err)
	}
}
