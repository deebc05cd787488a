package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/worker"
)

// A worker that could not be had for an initialize, for a reason none of the pool's named
// errors gives (a start that panicked, as those waiting on it learn it), is a worker that
// could not be started: 503 with Retry-After, as before the eras shared callError; never the
// 200 of a call whose worker is gone, since no call was made.
func TestAttachFailureOfNoKnownKindIs503(t *testing.T) {
	f := newFixture(t)
	msg := &jsonrpc.Message{ID: []byte(`1`), Method: "initialize"}
	unnamed := errors.New("pool: the worker's start failed") // the pool's errStartPanicked
	var he *httpError
	if !errors.As(f.gw.attachError(httptest.NewRecorder(), msg, unnamed), &he) {
		t.Fatal("initialize: no refusal")
	}
	if he.Status != http.StatusServiceUnavailable || he.Header.Get("Retry-After") == "" {
		t.Errorf("initialize: %d %q (Retry-After %q), want 503 with Retry-After", he.Status, he.Message, he.Header.Get("Retry-After"))
	}
	if !errors.As(sessionlessAttachError(msg, unnamed), &he) {
		t.Fatal("sessionless: no refusal")
	}
	if he.Status != http.StatusServiceUnavailable || he.Header.Get("Retry-After") == "" {
		t.Errorf("sessionless: %d %q (Retry-After %q), want 503 with Retry-After", he.Status, he.Message, he.Header.Get("Retry-After"))
	}
}

// failingRestarts launches the first worker and refuses to prepare any later one.
type failingRestarts struct {
	testLauncher
	launches atomic.Int32
}

func (l *failingRestarts) Launch(ctx context.Context, id worker.Identity) (worker.Launch, error) {
	if l.launches.Add(1) > 1 {
		return worker.Launch{}, errors.New("the backend login is down")
	}
	return l.testLauncher.Launch(ctx, id)
}

// A session's call whose worker died and could not be started again never reached a worker:
// 503 with Retry-After and a JSON-RPC error with the call's id, in both eras alike. The
// go-sdk (1.6 on) and TypeScript clients take a 503 as the call's failure and keep the
// session, and the session goes on: it is not ended for it.
func TestSessionCallWhoseRestartFailsIs503(t *testing.T) {
	l := &failingRestarts{testLauncher: testLauncher{mode: "demo", dataDir: t.TempDir()}}
	f := newFixture(t, func(o *Options) {
		o.Workers = l
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
	})
	c := f.client("alice-rw")
	c.open()
	pid := c.sessionObj().member.WorkerPid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the dead worker out of service", func() bool { return c.sessionObj().member.WorkerPid() == 0 })
	r := c.callTool("30", "whoami", map[string]any{})
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("call whose restart failed: %d (Retry-After %q) %s, want 503 with Retry-After", r.status, r.header.Get("Retry-After"), r.body)
	}
	if m := r.only(t); m.Error == nil || string(m.ID) != "30" {
		t.Errorf("answer %s, want a JSON-RPC error with id 30", r.body)
	}
	if again := c.callTool("31", "whoami", map[string]any{}); again.status == http.StatusNotFound {
		t.Errorf("the session ended after a failed restart: %d %s", again.status, again.body)
	}
}
