package test

// Helpers for the per-user worker tests (worker_per: user, the default): several sessions of
// one user share one worker process, so these tests read which worker served a session from
// two independent places, gemgate's "session opened" log line (its pid and worker fields)
// and the worker's own `whoami` (the demo reports GEMGATE_SESSION, which is the worker's id
// with worker_per: user). Every name here starts with "pu".

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// puWho is what the demo worker's whoami tool says about the worker that answered.
type puWho struct {
	User, Worker string
	ReadOnly     bool
}

// puWhoami asks the worker serving cs who it is.
func puWhoami(t *testing.T, cs *mcp.ClientSession) puWho {
	t.Helper()
	var w puWho
	got := text(callTool(t, cs, "whoami", nil))
	if _, err := fmt.Sscanf(got, "user=%s session=%s read_only=%t", &w.User, &w.Worker, &w.ReadOnly); err != nil {
		t.Fatalf("whoami answered %q: %v", got, err)
	}
	return w
}

// puOpened is the worker pid and worker id gemgate logged when it opened session id.
func puOpened(t *testing.T, g *gemgate, id string) (pid int, worker string) {
	t.Helper()
	for _, ev := range g.logEvents("session opened") {
		if ev["session"] == id {
			p, _ := ev["pid"].(float64)
			w, _ := ev["worker"].(string)
			if p == 0 || w == "" {
				t.Fatalf("\"session opened\" for %s lacks a pid or worker: %v", id, ev)
			}
			return int(p), w
		}
	}
	t.Fatalf("no \"session opened\" log line for session %s", id)
	return 0, ""
}

// puWaitStarted waits until the demo worker has logged "slow: started" n times in all.
func puWaitStarted(t *testing.T, g *gemgate, marker string, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if puCount(g, marker) >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%q logged %d times within %v, want %d", marker, puCount(g, marker), within, n)
}

// puCount is how many log lines contain s.
func puCount(g *gemgate, s string) int {
	g.logs.mu.Lock()
	defer g.logs.mu.Unlock()
	n := 0
	for _, l := range g.logs.lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}
