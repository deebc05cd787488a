package pool

import (
	"strings"
	"testing"
	"time"
)

// A responsiveness check is of the worker the member has when it is asked for, and runs on
// its own: a caller that detaches at once (a 2026-07-28 request, after its timeout) still has
// its worker pinged.
func TestCheckResponsiveOfACallerThatDetachesAtOnce(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	keeper := attach(t, p, "alice", false, `{}`, newCaller(time.Now())) // keeps the worker running
	gone := attach(t, p, "alice", false, `{}`, newCaller(time.Now()))
	gone.m.CheckResponsive(nil)
	gone.m.Detach()
	eventually(t, "the worker pinged", func() bool {
		return strings.Contains(answer(t, keeper.tool(t, "record", nil)), "ping")
	})
}
