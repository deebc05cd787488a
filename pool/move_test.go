package pool

import (
	"testing"
	"time"
)

// A step-up moves a caller to its read-write worker; a call it made on the read-only worker
// before the move goes on there and gets its own answer, not an error saying the session
// ended (the session goes on).
func TestMoveKeepsCallsInFlight(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
	roPid := a.m.WorkerPid()
	running := a.tool(t, "wait", map[string]any{"ms": 300})
	rw := a.id
	rw.ReadOnly = false
	if err := a.m.Move(t.Context(), rw); err != nil {
		t.Fatal(err)
	}
	if pid := a.m.WorkerPid(); pid == roPid || pid == 0 {
		t.Fatalf("after the move: worker %d, was %d", pid, roPid)
	}
	if got := answer(t, running); got != "waited" {
		t.Errorf("the call in flight at the move got %s, want its own answer", got)
	}
	a.id = rw
	if got := answer(t, a.tool(t, "record", map[string]any{})); got != "" {
		t.Errorf("a call after the move: %q", got)
	}
}
