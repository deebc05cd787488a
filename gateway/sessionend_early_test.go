package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/trace"
)

// hookHandler passes every record to inner and lets a test act on some of them, on the
// logging goroutine: the pool's "session attached" is logged inside pool.Attach, after the
// member joined its worker and before Attach returns to initialize.
type hookHandler struct {
	inner slog.Handler
	hook  func(slog.Record)
}

func (h *hookHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *hookHandler) Handle(ctx context.Context, r slog.Record) error {
	h.hook(r)
	return h.inner.Handle(ctx, r)
}
func (h *hookHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &hookHandler{inner: h.inner.WithAttrs(as), hook: h.hook}
}
func (h *hookHandler) WithGroup(n string) slog.Handler {
	return &hookHandler{inner: h.inner.WithGroup(n), hook: h.hook}
}

// A session whose worker dies after pool.Attach attached it but before initialize admitted it
// is let go by the pool then (worker_per: session, so on_worker_exit: end). Its end used to
// find no session in the table and do nothing, and initialize then opened the session on a
// worker already gone: counted open and against the user's cap, every call a 404, until the
// reaper found it idle. The initialize is refused instead, 503 with Retry-After, and nothing
// is left open.
func TestWorkerDeathBeforeAdmitRefusesTheSession(t *testing.T) {
	var (
		lost       = make(chan struct{})
		lostOnce   sync.Once
		attachOnce sync.Once
	)
	f := newFixture(t, func(o *Options) {
		inner := o.Logger.Handler()
		o.Logger = slog.New(&hookHandler{inner: inner, hook: func(r slog.Record) {
			switch r.Message {
			case "the session's worker ended before the session opened; refusing it":
				lostOnce.Do(func() { close(lost) })
			case "session attached":
				// Logged inside pool.Attach, on initialize's goroutine, after the member
				// joined its worker: the worker dies here, and initialize goes on once the
				// pool has let the session go (or, before the fix, after 5 s).
				attachOnce.Do(func() {
					pids := workerPids(t, "demo")
					if len(pids) != 1 {
						t.Errorf("demo workers at attach: %v, want one", pids)
						return
					}
					_ = syscall.Kill(pids[0], syscall.SIGKILL)
					select {
					case <-lost:
					case <-time.After(5 * time.Second):
						t.Error("the pool's letting go of the session was not seen within 5 s")
					}
				})
			}
		}})
		o.Trace = &trace.Tracer{Logger: o.Logger}
	})
	c := f.client("alice-rw")
	r := c.rpc("1", "initialize", initParams("2025-06-18"))
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || r.header.Get(headerSessionID) != "" {
		t.Errorf("initialize whose worker died before the session opened: status %d, Retry-After %q, session %q; want 503 with Retry-After and no session",
			r.status, r.header.Get("Retry-After"), r.header.Get(headerSessionID))
	}
	if n := f.gw.Sessions(); n != 0 {
		t.Errorf("%d sessions open after the refused initialize, want 0", n)
	}
	if n := metricValue(t, f, "gemgate_sessions_opened_total", "result", "worker_error"); n != 1 {
		t.Errorf("sessions_opened_total{worker_error} = %v, want 1", n)
	}
	// The user's cap is not held by it: the next initialize opens a session.
	c2 := f.client("alice-rw")
	c2.open()
}
