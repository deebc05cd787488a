package pool

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A call cancelled while its line is being written (the worker reads nothing meanwhile, and the
// line is longer than the pipe holds) is cancelled at the worker once written: the worker is
// told (notifications/cancelled), not left working for nobody, and the call's place is freed.
// Its turn comes when a cancelled call frees the one place (worker_concurrency: 1), so its
// write begins on gemgate's goroutine while its caller holds it.
func TestCancelWhileWritingTellsTheWorker(t *testing.T) {
	var logs lockedLog
	p, err := New(Options{Settings: Settings{WorkerPer: PerUser, Concurrency: 1}, Launcher: scriptLauncher{}, InitTimeout: waitFor,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	a := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now()))
	busy := a.tool(t, "wait", map[string]any{"ms": 1500}) // the worker sleeps, reading nothing
	time.Sleep(200 * time.Millisecond)                    // it has read the wait and sleeps
	long := a.tool(t, "later", map[string]any{"pad": strings.Repeat("x", 512<<10)})
	busy.Cancel("client disconnected") // long's turn: its write begins and blocks on the pipe
	writing := func() bool {
		long.s.mu.Lock()
		defer long.s.mu.Unlock()
		return long.written && long.proc == nil
	}
	eventually(t, "the long call's write begins", writing)
	time.Sleep(50 * time.Millisecond)
	if !writing() {
		t.Fatal("the long call's write ended while the worker slept; the pipe held it")
	}
	long.Cancel("client disconnected")
	// Told of the cancel, the script asks for the call's confirmation: gemgate answers it for
	// the given-up call.
	eventually(t, "the worker told of the cancel asks after it", func() bool {
		return strings.Contains(logs.String(), `"reason":"the call that asked was given up by its client"`)
	})
	answer(t, a.tool(t, "record", nil)) // the one place is free again: a next call runs
}
