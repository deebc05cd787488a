package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/gemgate/gemgate/pool"

	"github.com/gemgate/gemgate/worker"
)

// failingLauncher stands for a worker that cannot be started, in one of the ways it happens.
type failingLauncher struct {
	err  error  // worker.Launch fails (a credential exchange refused, no command)
	path string // else: the worker's executable
}

func (l failingLauncher) Launch(context.Context, worker.Identity) (worker.Launch, error) {
	if l.err != nil {
		return worker.Launch{}, l.err
	}
	return worker.Launch{Spec: worker.Spec{Path: l.path, StopGrace: time.Second}}, nil
}

// TestWorkerThatCannotStartIs503: a session whose worker cannot be started is not opened,
// and the client is told to come back later with 503, Retry-After and its own request id,
// not 200 with an error inside (which clients take as the server's final word).
func TestWorkerThatCannotStartIs503(t *testing.T) {
	tests := []struct {
		name    string
		workers pool.Launcher
	}{
		{"launch fails", failingLauncher{err: errors.New("no descriptors left")}},
		{"exec fails", failingLauncher{path: "/nonexistent/worker"}},
		{"exits at start", failingLauncher{path: "/bin/false"}},
		{"initialize times out", &testLauncher{mode: "slowinit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(o *Options) {
				o.Workers = tt.workers
				o.InitTimeout = 300 * time.Millisecond
			})
			r := f.client("alice-rw").rpc(`"open-1"`, "initialize", initParams("2025-06-18"))
			if r.status != http.StatusServiceUnavailable {
				t.Errorf("status %d, want 503; body %s", r.status, r.body)
			}
			if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
				t.Errorf("Retry-After %q, want whole seconds", r.header.Get("Retry-After"))
			}
			if r.header.Get(headerSessionID) != "" {
				t.Error("a session id was minted")
			}
			if m := r.only(t); string(m.ID) != `"open-1"` || m.Error == nil {
				t.Errorf("answer %s: want an error with the request's id \"open-1\"", m.Encode())
			}
			if f.gw.Sessions() != 0 {
				t.Errorf("%d sessions open", f.gw.Sessions())
			}
		})
	}
}
