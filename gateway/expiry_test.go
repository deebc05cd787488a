package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/worker"
)

// expiringLauncher gives every worker a credential valid for ttl, and counts launches.
type expiringLauncher struct {
	testLauncher
	ttl      time.Duration
	launches atomic.Int32
}

func (l *expiringLauncher) Launch(ctx context.Context, id worker.Identity) (worker.Launch, error) {
	la, err := l.testLauncher.Launch(ctx, id)
	la.CredentialExpiry = time.Now().Add(l.ttl)
	l.launches.Add(1)
	return la, err
}

func expiryFixture(t *testing.T, policy string) (*fixture, *expiringLauncher, *client) {
	t.Helper()
	l := &expiringLauncher{testLauncher: testLauncher{mode: "demo", dataDir: t.TempDir()}, ttl: time.Hour}
	var skew atomic.Int64 // how far the pool's clock runs ahead
	f := newFixture(t, func(o *Options) {
		o.Workers = l
		o.OnTokenExpiry = policy
		o.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	c := f.client("alice-rw")
	c.open()
	if r := c.callTool("10", "write_note", map[string]any{"name": "kept", "text": "on disk"}); r.status != http.StatusOK {
		t.Fatalf("write_note: %d %s", r.status, r.body)
	}
	// The credential expires now (waiting an hour is not a test).
	skew.Store(int64(2 * time.Hour))
	return f, l, c
}

func TestOnTokenExpiryKeep(t *testing.T) {
	_, l, c := expiryFixture(t, pool.ExpiryKeep)
	pid := c.sessionObj().member.WorkerPid()
	if r := c.callTool("2", "whoami", map[string]any{}); r.status != http.StatusOK || r.only(t).Error != nil {
		t.Fatalf("whoami after expiry: %d %s", r.status, r.body)
	}
	if got := c.sessionObj().member.WorkerPid(); got != pid || l.launches.Load() != 1 {
		t.Errorf("keep replaced the worker (pid %d -> %d, %d launches)", pid, got, l.launches.Load())
	}
}

func TestOnTokenExpiryEnd(t *testing.T) {
	f, _, c := expiryFixture(t, pool.ExpiryEnd)
	pid := c.sessionObj().member.WorkerPid()
	if r := c.callTool("2", "whoami", map[string]any{}); r.status != http.StatusNotFound {
		t.Fatalf("a request after expiry got %d, want 404", r.status)
	}
	eventually(t, 5*time.Second, "worker gone", func() bool { return !alive(pid) })
	// The session's end is logged as it ends, which need not come before the worker is gone.
	eventually(t, 5*time.Second, "a session end with reason token_expired in the log", func() bool {
		return strings.Contains(f.log.String(), `"reason":"token_expired"`)
	})
}

func TestOnTokenExpiryRestart(t *testing.T) {
	_, l, c := expiryFixture(t, pool.ExpiryRestart)
	s := c.sessionObj()
	oldPid := s.member.WorkerPid()
	r := c.callTool("2", "read_note", map[string]any{"name": "kept"})
	if r.status != http.StatusOK || !strings.Contains(toolText(t, r.only(t)), "on disk") {
		t.Fatalf("the first request after expiry: %d %s", r.status, r.body)
	}
	newPid := s.member.WorkerPid()
	if newPid == oldPid || l.launches.Load() != 2 {
		t.Fatalf("no restart: pid %d -> %d, %d launches", oldPid, newPid, l.launches.Load())
	}
	if c.sessionObj() != s {
		t.Error("the restart changed the session")
	}
	eventually(t, 5*time.Second, "old worker gone", func() bool { return !alive(oldPid) })
	// The session carries on with the new worker, and its watcher did not take the old
	// worker's end for the session's.
	time.Sleep(100 * time.Millisecond)
	if r := c.callTool("3", "whoami", map[string]any{}); r.status != http.StatusOK || r.only(t).Error != nil {
		t.Fatalf("after the restart: %d %s", r.status, r.body)
	}
}
