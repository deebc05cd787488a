package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// expiringLauncher gives every worker a credential valid for ttl, and counts launches.
type expiringLauncher struct {
	testLauncher
	ttl      time.Duration
	launches atomic.Int32
}

func (l *expiringLauncher) Launch(ctx context.Context, id Identity) (Launch, error) {
	la, err := l.testLauncher.Launch(ctx, id)
	la.CredentialExpiry = time.Now().Add(l.ttl)
	l.launches.Add(1)
	return la, err
}

func expiryFixture(t *testing.T, policy string) (*fixture, *expiringLauncher, *client) {
	t.Helper()
	l := &expiringLauncher{testLauncher: testLauncher{mode: "demo", dataDir: t.TempDir()}, ttl: time.Hour}
	f := newFixture(t, func(o *Options) { o.Workers = l; o.OnTokenExpiry = policy })
	c := f.client("alice-rw")
	c.open()
	if r := c.callTool("10", "write_note", map[string]any{"name": "kept", "text": "on disk"}); r.status != http.StatusOK {
		t.Fatalf("write_note: %d %s", r.status, r.body)
	}
	// The credential expires now (waiting an hour is not a test).
	s := c.sessionObj()
	s.mu.Lock()
	s.credExpiry = time.Now().Add(-time.Second)
	s.mu.Unlock()
	return f, l, c
}

func TestOnTokenExpiryKeep(t *testing.T) {
	_, l, c := expiryFixture(t, ExpiryKeep)
	pid := c.sessionObj().worker().Pid()
	if r := c.callTool("2", "whoami", map[string]any{}); r.status != http.StatusOK || r.only(t).Error != nil {
		t.Fatalf("whoami after expiry: %d %s", r.status, r.body)
	}
	if got := c.sessionObj().worker().Pid(); got != pid || l.launches.Load() != 1 {
		t.Errorf("keep replaced the worker (pid %d -> %d, %d launches)", pid, got, l.launches.Load())
	}
}

func TestOnTokenExpiryEnd(t *testing.T) {
	f, _, c := expiryFixture(t, ExpiryEnd)
	pid := c.sessionObj().worker().Pid()
	if r := c.callTool("2", "whoami", map[string]any{}); r.status != http.StatusNotFound {
		t.Fatalf("a request after expiry got %d, want 404", r.status)
	}
	eventually(t, 5*time.Second, "worker gone", func() bool { return !alive(pid) })
	if !strings.Contains(f.log.String(), `"reason":"token_expired"`) {
		t.Error("no session end with reason token_expired in the log")
	}
}

func TestOnTokenExpiryRestart(t *testing.T) {
	_, l, c := expiryFixture(t, ExpiryRestart)
	s := c.sessionObj()
	oldPid := s.worker().Pid()
	r := c.callTool("2", "read_note", map[string]any{"name": "kept"})
	if r.status != http.StatusOK || !strings.Contains(toolText(t, r.only(t)), "on disk") {
		t.Fatalf("the first request after expiry: %d %s", r.status, r.body)
	}
	newPid := s.worker().Pid()
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
