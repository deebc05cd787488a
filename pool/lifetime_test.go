package pool

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemgate/gemgate/worker"
)

// A per-user worker outlives its callers by worker_idle_timeout, and no longer. The idle timer
// is a real time.AfterFunc (Options.Now does not drive it, and a worker process is no goroutine
// testing/synctest could wait on), so the timeout here is short and the end is waited for.
// That the worker stays while a caller is attached is checked without waiting: no idle timer
// is armed, and the timer's own end (idleEnd), run as if one had fired, leaves the worker.
func TestIdleWorkerEndsAfterTimeout(t *testing.T) {
	const idle = 50 * time.Millisecond
	p := newTestPool(t, Settings{IdleTimeout: idle})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	pid := a.m.WorkerPid()
	a.m.Detach()
	s, w := b.m.current()
	s.mu.Lock()
	armed := s.idle != nil
	s.mu.Unlock()
	if armed {
		t.Fatal("an idle timer runs for a worker with a caller attached")
	}
	s.idleEnd(w)
	if workers(p) != 1 || !alive(pid) || b.m.WorkerPid() != pid {
		t.Fatalf("the worker ended with a caller attached: %d workers, pid %d alive %v", workers(p), pid, alive(pid))
	}
	b.m.Detach()
	eventually(t, "the unattended worker ends", func() bool { return workers(p) == 0 && !alive(pid) })
	// A new caller gets a new worker.
	c := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	if c.m.WorkerPid() == pid || c.m.WorkerPid() == 0 {
		t.Errorf("after the idle end: worker pid %d, was %d", c.m.WorkerPid(), pid)
	}
}

// on_worker_exit: with keep (the per-user default) a dead worker's callers stay attached and
// the next call starts a fresh worker; with end they are let go with ReasonWorkerExit.
func TestOnWorkerExit(t *testing.T) {
	for _, mode := range []string{ExitKeep, ExitEnd} {
		t.Run(mode, func(t *testing.T) {
			p := newTestPool(t, Settings{OnWorkerExit: mode})
			a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
			pid := a.m.WorkerPid()
			held := b.tool(t, "hold", map[string]any{})
			if got := answer(t, a.tool(t, "die", map[string]any{})); !strings.Contains(got, "code") {
				t.Errorf("the call that killed the worker got %s, want an error", got)
			}
			if got := answer(t, held); !strings.Contains(got, "code") {
				t.Errorf("the other caller's pending call got %s, want an error", got)
			}
			eventually(t, "the dead worker is out of service", func() bool { return workers(p) == 0 })
			switch mode {
			case ExitKeep:
				for _, s := range []*session{a, b} {
					select {
					case r := <-s.c.detached:
						t.Errorf("session %s let go (%s) with keep", s.id.Session, r)
					default:
					}
					if got := answer(t, s.tool(t, "record", map[string]any{})); got != "" {
						t.Errorf("after the crash: %q", got)
					}
				}
				if np := a.m.WorkerPid(); np == pid || np == 0 || b.m.WorkerPid() != np {
					t.Errorf("workers after the crash: a %d, b %d (was %d): want one new one", np, b.m.WorkerPid(), pid)
				}
			case ExitEnd:
				for _, s := range []*session{a, b} {
					select {
					case r := <-s.c.detached:
						if r != ReasonWorkerExit {
							t.Errorf("session %s let go for %q, want %q", s.id.Session, r, ReasonWorkerExit)
						}
					case <-time.After(waitFor):
						t.Fatalf("session %s not let go", s.id.Session)
					}
					if _, err := s.call(t, "tools/call", map[string]any{"name": "record"}); !errors.Is(err, ErrDetached) {
						t.Errorf("a call after being let go: %v, want ErrDetached", err)
					}
				}
			}
		})
	}
}

// expiringLauncher is scriptLauncher with a backend credential that expires an hour after
// each launch.
type expiringLauncher struct{ scriptLauncher }

func (l expiringLauncher) Launch(ctx context.Context, id worker.Identity) (worker.Launch, error) {
	la, err := l.scriptLauncher.Launch(ctx, id)
	la.CredentialExpiry = time.Now().Add(time.Hour)
	return la, err
}

// With worker_per: session the client's own initialize goes to its worker, and the client's
// notifications/initialized after it: gemgate sends none at the first start. A successor (an
// on_token_expiry restart, with no client to send it) gets gemgate's.
func TestPerSessionRestartSendsInitialized(t *testing.T) {
	var skew atomic.Int64 // how far the pool's clock runs ahead
	p, err := New(Options{Settings: Settings{WorkerPer: PerSession, OnTokenExpiry: ExpiryRestart},
		Launcher: expiringLauncher{}, InitTimeout: waitFor,
		Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Now()))
	pid := a.m.WorkerPid()
	if got := answer(t, a.tool(t, "initialized", nil)); got != "0" {
		t.Fatalf("the first worker read %s initialized notifications from gemgate, want 0", got)
	}
	skew.Store(int64(2 * time.Hour))
	if got := answer(t, a.tool(t, "initialized", nil)); got != "1" || a.m.WorkerPid() == pid {
		t.Fatalf("the restarted worker (pid %d, was %d) read %s initialized notifications, want gemgate's 1",
			a.m.WorkerPid(), pid, got)
	}
}
