package pool

import (
	"encoding/json"
	"syscall"
	"testing"
	"time"
)

// TestDebugLevelOutlivesTheWorker: the most verbose level, debug, is carried over to a dead
// worker's successor like any other (it ranks 0, and must not be read as "no level set").
func TestDebugLevelOutlivesTheWorker(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	c, err := a.call(t, "logging/setLevel", map[string]string{"level": "debug"})
	if err != nil {
		t.Fatal(err)
	}
	if got := answer(t, c); got != `{}` {
		t.Fatalf("setLevel debug: %s", got)
	}
	pid := a.m.WorkerPid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the worker's death is seen", func() bool { return a.m.WorkerPid() != pid })
	if heard := record(t, a); heard != "setLevel debug" {
		t.Errorf("the successor heard %q, want the level debug", heard)
	}
}

// TestLevelNames: the eight MCP (syslog) level names are read as themselves, most verbose
// first; anything else is no level, and a log line of no known level counts as the most
// severe, so that no caller misses it.
func TestLevelNames(t *testing.T) {
	for i, name := range []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
		params := json.RawMessage(`{"level":"` + name + `"}`)
		if got := levelName(params); got != name {
			t.Errorf("levelName(%s) = %q", params, got)
		}
		if got := levelOf(params); got != i {
			t.Errorf("levelOf(%s) = %d, want %d", params, got, i)
		}
	}
	for _, params := range []string{`{"level":"DEBUG"}`, `{"level":"verbose"}`, `{"level":""}`, `{}`, `{"level":1}`, `not json`} {
		if got := levelName(json.RawMessage(params)); got != "" {
			t.Errorf("levelName(%s) = %q, want none", params, got)
		}
		if got := levelOf(json.RawMessage(params)); got != 7 {
			t.Errorf("levelOf(%s) = %d, want 7 (emergency)", params, got)
		}
	}
}
