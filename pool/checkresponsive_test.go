package pool

import (
	"strings"
	"testing"
	"time"
)

// recorded is what alice's worker of the given mode has recorded (the script worker's record
// tool), asked through a caller of its own.
func recorded(t *testing.T, p *Pool, readOnly bool) string {
	t.Helper()
	c := attach(t, p, "alice", readOnly, `{}`, newCaller(time.Now()))
	defer c.m.Detach()
	return answer(t, c.tool(t, "record", nil))
}

// A responsiveness check is of the call's worker, taken when it is asked for, and runs on its
// own: a caller that detaches at once (a 2026-07-28 request, after its timeout) still has its
// worker pinged.
func TestCheckResponsiveOfACallerThatDetachesAtOnce(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	keeper := attach(t, p, "alice", false, `{}`, newCaller(time.Now())) // keeps the worker running
	defer keeper.m.Detach()
	gone := attach(t, p, "alice", false, `{}`, newCaller(time.Now()))
	gone.tool(t, "hold", nil).CheckResponsive(nil)
	gone.m.Detach()
	eventually(t, "the worker pinged", func() bool { return strings.Contains(recorded(t, p, false), "ping") })
}

// The check is of the worker the call went to: after a step-up moved its caller to the
// read-write worker, the call timed out at the read-only one, which is pinged; the read-write
// worker, which the call never reached, is not.
func TestCheckResponsiveIsOfTheCallsOwnWorker(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	keeper := attach(t, p, "alice", true, `{}`, newCaller(time.Now())) // keeps the read-only worker
	defer keeper.m.Detach()
	a := attach(t, p, "alice", true, `{}`, newCaller(time.Now()))
	call := a.tool(t, "hold", nil)
	rw := a.id
	rw.ReadOnly = false
	if err := a.m.Move(t.Context(), rw); err != nil {
		t.Fatal(err)
	}
	call.CheckResponsive(nil)
	eventually(t, "the read-only worker pinged", func() bool { return strings.Contains(recorded(t, p, true), "ping") })
	if got := recorded(t, p, false); strings.Contains(got, "ping") {
		t.Errorf("the read-write worker, which the call never reached, was pinged: %s", got)
	}
}
