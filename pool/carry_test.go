package pool

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A per-user worker dies (on_worker_exit: keep) and the next request starts its successor;
// its sessions stay, told nothing of the change. What they asked of the worker they share
// must not be lost with it: the successor is subscribed to every URI an attached session is
// subscribed to, and set to the most verbose logging level one asked for, before it takes
// their calls; resources/updated from it reaches the subscribers. A session that left
// meanwhile carries nothing over.
func TestSubscriptionsAndLevelsOutliveTheWorker(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	b := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	gone := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	for _, step := range []struct {
		s      *session
		method string
		params map[string]string
	}{
		{a, "resources/subscribe", map[string]string{"uri": "u1"}},
		{b, "resources/subscribe", map[string]string{"uri": "u1"}},
		{b, "resources/subscribe", map[string]string{"uri": "u2"}},
		{gone, "resources/subscribe", map[string]string{"uri": "u3"}},
		{a, "logging/setLevel", map[string]string{"level": "warning"}},
		{gone, "logging/setLevel", map[string]string{"level": "debug"}},
	} {
		c, err := step.s.call(t, step.method, step.params)
		if err != nil {
			t.Fatal(err)
		}
		if got := answer(t, c); got != `{}` {
			t.Fatalf("%s %v: %s", step.method, step.params, got)
		}
	}
	pid := a.m.WorkerPid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the worker's death is seen", func() bool { return a.m.WorkerPid() != pid })
	gone.m.Detach()
	heard := record(t, a) // starts the successor: what it heard before this call
	if heard != "subscribe u1,subscribe u2,setLevel warning" && heard != "subscribe u2,subscribe u1,setLevel warning" {
		t.Errorf("the successor heard %q, want u1 and u2 subscribed and the level warning", heard)
	}
	if a.m.WorkerPid() == pid {
		t.Fatal("no successor")
	}
	answer(t, b.tool(t, "emit", map[string]any{"method": "notifications/resources/updated", "params": map[string]string{"uri": "u1"}}))
	for _, s := range []*session{a, b} {
		if n := notified(t, s.c, "notifications/resources/updated"); n != 1 {
			t.Errorf("session %s got %d resources/updated from the successor, want 1", s.id.Session, n)
		}
	}
	// The counts carried on: the successor hears the last unsubscribe of u1 only.
	for _, s := range []*session{a, b} {
		c, err := s.call(t, "resources/unsubscribe", map[string]string{"uri": "u1"})
		if err != nil {
			t.Fatal(err)
		}
		answer(t, c)
	}
	if got := record(t, a); got != heard+",unsubscribe u1" {
		t.Errorf("after both unsubscribed the successor heard %q", got)
	}
}

// A URI the predecessor took may be one its successor refuses (the resource is gone). The
// successor's refusal of the carried subscribe, which no client sent, uncounts the sessions
// that counted on it, and gemgate keeps nothing of the URI: a session that subscribes again
// is answered by the worker, and learns the refusal, instead of getting {} from gemgate.
func TestCarriedSubscribeRefusedBySuccessor(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	gone := filepath.Join(t.TempDir(), "gone")
	uri := "refusedif:" + gone
	sub := func() string {
		t.Helper()
		c, err := a.call(t, "resources/subscribe", map[string]string{"uri": uri})
		if err != nil {
			t.Fatal(err)
		}
		got := <-c.Result()
		if got.Error != nil {
			return string(got.Error)
		}
		return string(got.Result)
	}
	if got := sub(); got != `{}` {
		t.Fatalf("subscribe: %s", got)
	}
	if err := os.WriteFile(gone, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pid := a.m.WorkerPid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the worker's death is seen", func() bool { return a.m.WorkerPid() != pid })
	if heard := record(t, a); heard != "subscribe "+uri {
		t.Fatalf("the successor heard %q", heard)
	}
	s := a.m.slot()
	eventually(t, "the refused URI is let go", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.w.subs)+len(s.w.subsOf)+len(s.w.heard)+len(s.w.subPending) == 0
	})
	if got := sub(); !strings.Contains(got, "-32002") {
		t.Errorf("subscribing again: %s, want the successor's refusal", got)
	}
	if heard := record(t, a); heard != "subscribe "+uri+",subscribe "+uri {
		t.Errorf("the successor heard %q, want the carried subscribe and the session's own", heard)
	}
}
