package test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// After a request times out, gemgate answers the caller with -32001 and its own id, sends the
// worker notifications/cancelled, then checks that the worker still answers a ping; if not,
// it interrupts it (SIGINT) and pings again; if that fails too, it stops the worker (stdin
// closed, SIGTERM, SIGKILL) as "unresponsive". With worker_per: user the session outlives it
// and its next call starts a fresh worker. Each step is tested with a worker that gives in at
// that step (testdata/stuckworker).
func TestRequestTimeoutEscalation(t *testing.T) {
	t.Parallel()
	bin := buildTestdata(t, "stuckworker")
	const (
		timedOut     = "stuck: hanging on a call"
		cancelled    = "stuck: cancel ignored"
		pinged       = "stuck: ping"
		interrupt    = "worker did not answer a ping after a request timeout; interrupting it"
		gotSIGINT    = "stuck: got interrupt"
		unresponsive = "worker unresponsive after a request timeout; stopping it"
	)
	tests := []struct {
		mode string
		want []string // in this order in gemgate's log
		not  []string
		ends bool // the worker is stopped as unresponsive
	}{
		{"pings", []string{timedOut, cancelled, pinged}, []string{interrupt, unresponsive}, false},
		{"sigint", []string{timedOut, cancelled, pinged, interrupt, gotSIGINT}, []string{unresponsive}, false},
		// The deaf worker's "got interrupt" may print before or after the second ping arrives,
		// so the order pins the gateway's steps; SIGTERM ignored, only SIGKILL can end it.
		{"deaf", []string{timedOut, cancelled, pinged, interrupt, pinged, unresponsive, "stuck: got terminated"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			g := startDev(t, "--worker-command", bin+" "+tt.mode, "--request-timeout", "1s")
			s := ltOpen(t, g, g.Tokens["alice"], nil)
			pid := ltWorkerPID(t, g, s.id)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			m, _, _, err := s.call(ctx, "hang-1", "tools/call", map[string]any{"name": "hang", "arguments": map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if m.Error == nil || m.Error.Code != -32001 || string(m.ID) != `"hang-1"` {
				t.Fatalf("answer: id %s, result %s, error %+v; want -32001 for \"hang-1\"", m.ID, m.Result, m.Error)
			}
			if took := time.Since(start); took < time.Second {
				t.Errorf("the timeout answer came after %v, before the 1s request_timeout", took)
			}
			last := tt.want[len(tt.want)-1]
			ltWaitLog(t, g, last, 30*time.Second)
			if tt.ends {
				// A deaf worker takes the whole staged stop (stdin, SIGTERM, SIGKILL) before its
				// end is logged; the session stays and gets a fresh worker.
				ltWaitGone(t, pid, 30*time.Second)
				if !perUserWorkers() { // the session's own worker: the session ends with it
					if r := ltReasonWithin(g, s.id, 10*time.Second); r != "unresponsive" && r != "worker_exit" {
						t.Errorf("session ended (%q) with its unresponsive worker, want unresponsive", r)
					}
					return
				}
				ltWaitWorkerEnd(t, g, "unresponsive")
				if r := ltEndReason(g, s.id); r != "" {
					t.Errorf("the session ended (%s) with its worker; with worker_per: user it stays", r)
				}
				if a, _, _, err := s.call(ctx, "after", "tools/list", map[string]any{}); err != nil || a.Error != nil {
					t.Fatalf("tools/list after the worker was stopped: %v %+v", err, a.Error)
				}
			} else {
				// Alive: the session still answers, on the same worker.
				if a, _, _, err := s.call(ctx, "after", "tools/list", map[string]any{}); err != nil || a.Error != nil {
					t.Fatalf("tools/list after the timeout: %v %+v", err, a.Error)
				}
				if !alive(pid) || ltEndReason(g, s.id) != "" {
					t.Fatalf("the worker (alive %v) or the session (ended %q) did not survive", alive(pid), ltEndReason(g, s.id))
				}
			}
			seq := logSequence(g)
			if !isSubsequence(seq, tt.want) {
				t.Errorf("gemgate's log does not show, in order, %q; it shows:\n%s", tt.want, strings.Join(seq, "\n"))
			}
			if tt.mode != "pings" && !slices.Contains(seq, gotSIGINT) {
				t.Errorf("the worker never got SIGINT")
			}
			for _, n := range tt.not {
				if slices.Contains(seq, n) {
					t.Errorf("gemgate logged %q, which this worker should not have needed", n)
				}
			}
		})
	}
}

// A 2026-07-28 call that times out checks its worker as a session's does: a worker deaf to
// the ping and to SIGINT is stopped as unresponsive, and the next request gets a fresh one.
func TestSessionlessRequestTimeoutEscalation(t *testing.T) {
	t.Parallel()
	bin := buildTestdata(t, "stuckworker")
	g := startDev(t, "--worker-command", bin+" deaf", "--worker-per", "user", "--request-timeout", "1s")
	token := g.Tokens["alice"]
	status, m := sessionlessPost(t, g.URL, token, "1", "tools/call", map[string]any{"name": "hang", "arguments": map[string]any{}})
	if status != http.StatusOK || !strings.Contains(string(m["error"]), "-32001") {
		t.Fatalf("the hung call: %d %v, want -32001", status, m)
	}
	// Two pings of 5 s each, then the staged stop: SIGTERM ignored, only SIGKILL ends it.
	ltWaitLog(t, g, "stuck: got terminated", 30*time.Second)
	for _, rec := range ltLog(g) {
		if pid, ok := rec["pid"].(float64); ok && rec["msg"] == "worker started" {
			ltWaitGone(t, int(pid), 30*time.Second)
		}
	}
	ltWaitWorkerEnd(t, g, "unresponsive")
	want := []string{"stuck: hanging on a call", "stuck: ping", "worker did not answer a ping after a request timeout; interrupting it",
		"stuck: ping", "worker unresponsive after a request timeout; stopping it", "stuck: got terminated"}
	if seq := logSequence(g); !isSubsequence(seq, want) {
		t.Errorf("gemgate's log does not show, in order, %q; it shows:\n%s", want, strings.Join(seq, "\n"))
	}
	if status, m := sessionlessPost(t, g.URL, token, "2", "tools/list", nil); status != http.StatusOK || m["result"] == nil {
		t.Errorf("tools/list after the worker was stopped: %d %v", status, m)
	}
}

// ltWaitWorkerEnd waits for the log line of a worker that ended on its own (or was killed by
// gemgate as unresponsive) with the reason given.
func ltWaitWorkerEnd(t testing.TB, g *gemgate, reason string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, rec := range ltLog(g) {
			if rec["msg"] == "worker ended on its own; its calls failed" && rec["reason"] == reason {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no worker ended with reason %q\n%s", reason, g.logs)
}

// logSequence is gemgate's log in order: each record's message, or for a worker's stderr the
// line it printed.
func logSequence(g *gemgate) []string {
	var out []string
	for _, rec := range ltLog(g) {
		msg, _ := rec["msg"].(string)
		if line, ok := rec["line"].(string); ok && msg == "worker stderr" {
			msg = line
		}
		out = append(out, msg)
	}
	return out
}

// isSubsequence reports whether want appears in seq in order, not necessarily adjacent.
func isSubsequence(seq, want []string) bool {
	i := 0
	for _, s := range seq {
		if i < len(want) && s == want[i] {
			i++
		}
	}
	return i == len(want)
}
