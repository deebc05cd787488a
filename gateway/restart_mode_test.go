package gateway

import (
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gemgate/gemgate/pool"
)

// worker_per: user with on_token_expiry: restart. Alice's read-write session meets an
// expired worker credential on a request that carries her refreshed token without the write
// scope (a whoami, which read-only may call). The request is narrowed, and the session stays
// on the read-write worker; that worker must not be restarted from the narrowed request's
// identity, or GEMGATE_READ_ONLY=1 and a credential exchanged from the read-only token would
// sit in the read-write slot, and alice's read-write token could no longer write through it
// (nor could any other read-write session of hers). Nor does the narrowed request run on the
// expired credential (narrowed requests would keep its login alive for good): it meets 503,
// and her next request with the write scope restarts the worker read-write.
func TestRestartInReadWriteSlotKeepsReadWrite(t *testing.T) {
	l := &expiringLauncher{testLauncher: testLauncher{mode: "demo", dataDir: t.TempDir()}, ttl: time.Hour}
	var skew atomic.Int64
	f := newFixture(t, func(o *Options) {
		o.Workers = l
		o.OnTokenExpiry = pool.ExpiryRestart
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	c := f.client("alice-rw")
	c.open()
	if r := c.callTool("10", "write_note", map[string]any{"name": "a", "text": "x"}); r.status != http.StatusOK || r.only(t).Error != nil {
		t.Fatalf("write_note: %d %s", r.status, r.body)
	}
	skew.Store(int64(2 * time.Hour)) // the worker's credential has expired
	c.token = "alice-ro"             // her refreshed token lacks mcp:write
	r := c.callTool("11", "whoami", map[string]any{})
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || string(r.only(t).ID) != "11" {
		t.Errorf("narrowed whoami on the expired worker: %d %s, want 503 with Retry-After and its id", r.status, r.body)
	}
	if l.launches.Load() != 1 {
		t.Errorf("launches after the narrowed request: %d, want 1 (it restarts nothing)", l.launches.Load())
	}
	c.token = "alice-rw"
	w := c.callTool("12", "write_note", map[string]any{"name": "b", "text": "y"})
	if w.status != http.StatusOK {
		t.Fatalf("write_note: %d %s", w.status, w.body)
	}
	m := w.only(t)
	if m.Error != nil || strings.Contains(string(m.Result), `"isError":true`) {
		t.Errorf("write with the read-write token after expiry: %s %s", m.Result, m.Error)
	}
	skew.Store(0)
	who := toolText(t, c.callTool("13", "whoami", map[string]any{}).only(t))
	if !strings.Contains(who, "read_only=false") {
		t.Errorf("the read-write session's worker, restarted: whoami %q, want read_only=false", who)
	}
	if l.launches.Load() != 2 {
		t.Errorf("launches: %d, want 2 (the read-write request restarted the worker)", l.launches.Load())
	}
}

// Alice's read-write worker has died (on_worker_exit: keep) and her session's next request
// carries a token without the write scope. That request does not start the read-write
// worker: it is answered 503 with Retry-After and a JSON-RPC error with its own id, and her
// next request with the write scope starts a read-write worker that can write.
func TestNarrowedRequestDoesNotStartTheReadWriteWorker(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Pool = pool.Settings{WorkerPer: pool.PerUser} })
	c := f.client("alice-rw")
	c.open()
	pid := c.sessionObj().member.WorkerPid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the dead worker out of service", func() bool { return c.sessionObj().member.WorkerPid() == 0 })
	c.token = "alice-ro"
	r := c.callTool("20", "whoami", map[string]any{})
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Errorf("narrowed request with no worker running: HTTP %d, Retry-After %q, want 503 with one", r.status, r.header.Get("Retry-After"))
	}
	if m := r.only(t); m.Error == nil || string(m.ID) != `20` {
		t.Errorf("narrowed request's answer: %s, want an error with its id", r.body)
	}
	if n := workersRunning(t, f); n != 0 {
		t.Errorf("%d workers after the narrowed request, want 0", n)
	}
	c.token = "alice-rw"
	w := c.callTool("21", "write_note", map[string]any{"name": "b", "text": "y"})
	if m := w.only(t); w.status != http.StatusOK || m.Error != nil || strings.Contains(string(m.Result), `"isError":true`) {
		t.Errorf("write with the read-write token after the refusal: %d %s", w.status, w.body)
	}
}
