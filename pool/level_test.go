package pool

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
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
		if got := LevelOf(params); got != i {
			t.Errorf("LevelOf(%s) = %d, want %d", params, got, i)
		}
	}
	for _, params := range []string{`{"level":"DEBUG"}`, `{"level":"verbose"}`, `{"level":""}`, `{}`, `{"level":1}`, `not json`} {
		if got := levelName(json.RawMessage(params)); got != "" {
			t.Errorf("levelName(%s) = %q, want none", params, got)
		}
		if got := LevelOf(json.RawMessage(params)); got != 7 {
			t.Errorf("LevelOf(%s) = %d, want 7 (emergency)", params, got)
		}
	}
}

// logging/setLevel sets the worker to the most verbose level any caller asked for, and each
// caller gets only the messages at or above its own level (all of them if it set none).
func TestLoggingLevelIsTheMostVerboseAsked(t *testing.T) {
	p := newTestPool(t, Settings{})
	errs, debug, info, none := attach(t, p, "alice", false, `{}`, newCaller(time.Time{})), attach(t, p, "alice", false, `{}`, newCaller(time.Time{})),
		attach(t, p, "alice", false, `{}`, newCaller(time.Time{})), attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	for _, step := range []struct {
		s     *session
		level string
		heard string // what the worker has heard after this step
	}{
		{errs, "error", "setLevel error"},
		{debug, "debug", "setLevel error,setLevel debug"},
		{info, "info", "setLevel error,setLevel debug"}, // debug already covers it
	} {
		call, err := step.s.call(t, "logging/setLevel", map[string]string{"level": step.level})
		if err != nil {
			t.Fatal(err)
		}
		if got := answer(t, call); got != `{}` {
			t.Fatalf("setLevel %s: %s", step.level, got)
		}
		if got := record(t, none); got != step.heard {
			t.Errorf("after %s the worker heard %q, want %q", step.level, got, step.heard)
		}
	}
	for _, level := range []string{"info", "critical"} {
		answer(t, none.tool(t, "emit", map[string]any{"method": "notifications/message", "params": map[string]any{"level": level, "data": "x"}}))
	}
	levels := func(c *fakeCaller) string {
		var out []string
		for _, m := range c.deliveries(t) {
			if m.Method == "notifications/message" {
				out = append(out, levelName(m.Params))
			}
		}
		return strings.Join(out, ",")
	}
	for s, want := range map[*session]string{errs: "critical", debug: "info,critical", info: "info,critical", none: "info,critical"} {
		if got := levels(s.c); got != want {
			t.Errorf("session %s got messages %q, want %q", s.id.Session, got, want)
		}
	}
}

// A logging/setLevel whose level gemgate cannot read (a key in another case, a level name in
// another case, none) is refused by gemgate, never passed on: a worker that reads keys or
// names leniently (encoding/json folds case) would set the level of the worker every session
// of the user shares to one gemgate does not know of. Another session's debug lines would
// stop, and its own setLevel debug, answered by gemgate since the worker "is" at debug
// already, could not bring them back.
func TestUnreadableSetLevelDoesNotReachTheSharedWorker(t *testing.T) {
	p := newTestPool(t, Settings{})
	debug, other := attach(t, p, "alice", false, `{}`, newCaller(time.Time{})), attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	c, err := debug.call(t, "logging/setLevel", map[string]string{"level": "debug"})
	if err != nil {
		t.Fatal(err)
	}
	if got := answer(t, c); got != `{}` {
		t.Fatalf("setLevel debug: %s", got)
	}
	for _, params := range []any{map[string]string{"Level": "emergency"}, map[string]string{"level": "EMERGENCY"}, map[string]string{"level": "verbose"}, map[string]any{}} {
		c, err := other.call(t, "logging/setLevel", params)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Code int64 `json:"code"`
		}
		if got := answer(t, c); json.Unmarshal([]byte(got), &e) != nil || e.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("setLevel %v answered %s, want gemgate's -32602", params, got)
		}
	}
	if heard := record(t, other); heard != "setLevel debug" {
		t.Errorf("the shared worker heard %q, want only the level debug", heard)
	}
}
