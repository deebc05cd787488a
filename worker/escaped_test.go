package worker

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// startEscaping starts a worker that leaves behind a descendant in a session of its own,
// holding the worker's stdout (a daemon that kept its parent's output), and then exits. It
// returns the worker and the descendant's pid.
func startEscaping(t *testing.T) (*Process, int) {
	t.Helper()
	pidFile := t.TempDir() + "/pid"
	p, err := Start(Spec{
		Path:      "/bin/sh",
		Args:      []string{"-c", `setsid sh -c 'echo $$ > ` + pidFile + `; exec sleep 60' & sleep 0.3; exit 0`},
		StopGrace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	waitUntil(t, "the descendant wrote its pid", func() bool {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid != 0
	})
	t.Cleanup(func() {
		if pr, err := os.FindProcess(pid); err == nil {
			_ = pr.Kill()
		}
	})
	return p, pid
}

// A worker whose escaped descendant holds its stdout is still done once it exits: gemgate,
// its subreaper, kills the descendant (invariant 8) before it waits for stdout to end.
func TestEscapedDescendantHoldingStdoutIsReaped(t *testing.T) {
	p, pid := startEscaping(t)
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("the worker exited, but it is not done 5 s later: its descendant %d (alive %v) holds stdout", pid, alive(pid))
	}
	if alive(pid) {
		t.Errorf("descendant %d outlived its worker", pid)
	}
}

// Where gemgate cannot reap what holds the stdout (it is no subreaper, or another process
// adopted the holder), the worker is done after the stop grace all the same: its stdout is
// closed, and the calls it left get their error rather than wait for that process's end.
func TestStdoutHeldOpenIsCutAfterTheGrace(t *testing.T) {
	was := subreaper.Load()
	subreaper.Store(false) // ReapOrphans does nothing, as when gemgate is no subreaper
	t.Cleanup(func() { subreaper.Store(was) })
	p, pid := startEscaping(t)
	c, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "tools/call"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("the worker exited, but it is not done 5 s later: its descendant %d holds stdout", pid)
	}
	select {
	case m := <-c.Result():
		if !strings.Contains(string(m.Error), "workerExit") {
			t.Fatalf("the call left at the worker: %s, want the worker's exit", m.Error)
		}
	case <-time.After(time.Second):
		t.Fatal("the call left at the worker got no answer")
	}
	if !alive(pid) {
		t.Fatal("the descendant is gone: the test did not hold stdout open as it means to")
	}
}
