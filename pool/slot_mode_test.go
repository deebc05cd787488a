package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/worker"
)

// stallFirstLauncher's first launch, with entered set, waits as a token exchange against a
// slow issuer does: until release is closed, then starts the scripted worker, or until its
// context ends, then fails. Other launches start the scripted worker at once. It records
// every identity it launched for.
type stallFirstLauncher struct {
	first            atomic.Bool
	entered, release chan struct{}
	mu               sync.Mutex
	ids              []worker.Identity
}

func (l *stallFirstLauncher) Launch(ctx context.Context, id worker.Identity) (worker.Launch, error) {
	l.mu.Lock()
	l.ids = append(l.ids, id)
	l.mu.Unlock()
	if l.entered != nil && l.first.CompareAndSwap(false, true) {
		close(l.entered)
		select {
		case <-l.release:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			// What ExchangeCredential returns when its context ends mid-exchange.
			return worker.Launch{}, fmt.Errorf("worker credential: exchange: %w", context.Cause(ctx))
		}
	}
	return scriptLauncher{}.Launch(ctx, id)
}

func (l *stallFirstLauncher) launched() []worker.Identity {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]worker.Identity(nil), l.ids...)
}

func userIdentity(user string, readOnly bool, token string) Identity {
	return Identity{Issuer: "https://issuer.test", Subject: "sub-" + user, User: user,
		ReadOnly: readOnly, Session: "s" + fmt.Sprint(sessionSeq.Add(1)), Token: token}
}

// A read-write session of alice (worker key ReadOnly=false) sends a request with a token
// that lacks the write scope: the gateway narrows the request (Identity.ReadOnly=true) but
// keeps the session on the read-write worker. When that worker has died, its successor must
// not be launched from the narrowed request: the read-write slot would get a worker told
// GEMGATE_READ_ONLY=1, with the scopes and the exchanged credential of that narrowed token,
// shared by every other read-write session of alice. The narrowed call is refused with
// ErrAccessMismatch instead, and the next call of the slot's own access starts the worker.
func TestRestartedWorkerMatchesItsSlotsAccessMode(t *testing.T) {
	l := &stallFirstLauncher{}
	p, err := New(Options{Settings: Settings{}, Launcher: l, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	s := attach(t, p, "alice", false, `{}`, newCaller(time.Now()))
	_, w := s.m.current()
	c := s.tool(t, "die", nil)
	answer(t, c)
	eventually(t, "worker gone", func() bool { <-w.proc.Done(); _, cur := s.m.current(); return cur == nil })

	narrowed := s.id
	narrowed.ReadOnly = true
	narrowed.Token = "read-only-token"
	msg := &jsonrpc.Message{ID: json.RawMessage(`77`), Method: "tools/list", Params: json.RawMessage(`{}`)}
	if _, err := s.m.Call(t.Context(), Request{Message: msg, Identity: narrowed}); !errors.Is(err, ErrAccessMismatch) {
		t.Fatalf("narrowed call with no worker running: %v, want ErrAccessMismatch", err)
	}
	slot, _ := s.m.current()
	for _, id := range l.launched() {
		if id.ReadOnly != slot.key.ReadOnly {
			t.Errorf("worker of slot ReadOnly=%v launched with Identity.ReadOnly=%v (GEMGATE_READ_ONLY and credential from token %q)",
				slot.key.ReadOnly, id.ReadOnly, id.Token)
		}
	}
	if got := answer(t, s.tool(t, "record", map[string]any{})); got != "" {
		t.Errorf("a call of the slot's own access after the refusal: %q", got)
	}
	if sl, cur := s.m.current(); cur == nil || sl.key.ReadOnly {
		t.Errorf("after a read-write call the slot's worker is %+v, want a read-write one", cur)
	}
	if n := len(l.launched()); n != 2 {
		t.Errorf("%d launches, want 2 (the first worker and its read-write successor)", n)
	}
}
