package pool

import (
	"log/slog"
	"testing"
	"time"

	"github.com/gemgate/gemgate/worker"
)

// stderrLauncher starts the scripted worker behind a shell that first writes a line to its
// stderr, naming the user it was started for.
var stderrLauncher = scriptLauncher{edit: func(cl *worker.CommandLauncher) {
	cl.Command = append([]string{"/bin/sh", "-c", `echo "stderr line of $GEMGATE_USER's worker" >&2; exec "$0"`}, cl.Command...)
}}

// TestWorkerStderrLineNamesUserAndWorker: what a worker writes to its stderr goes to
// gemgate's log with the user the worker runs for and the worker's id (README, Workers), so
// an operator can tell whose worker said it; two users' workers are told apart.
func TestWorkerStderrLineNamesUserAndWorker(t *testing.T) {
	logs := &lockedLog{}
	p, err := New(Options{Settings: Settings{WorkerPer: PerUser}, Launcher: stderrLauncher, InitTimeout: waitFor,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Unix(1000, 0)))
	b := attach(t, p, "bob", false, `{}`, newCaller(time.Unix(1000, 0)))
	workers := map[string]string{"alice": a.m.WorkerID(), "bob": b.m.WorkerID()}
	if workers["alice"] == "" || workers["alice"] == workers["bob"] {
		t.Fatalf("worker ids %v: want two distinct ones", workers)
	}
	for user, wid := range workers {
		want := "stderr line of " + user + "'s worker"
		var rec map[string]any
		eventually(t, user+"'s worker stderr line logged", func() bool {
			for _, r := range logs.records(t) {
				if r["msg"] == "worker stderr" && r["line"] == want {
					rec = r
					return true
				}
			}
			return false
		})
		if rec["user"] != user || rec["worker"] != wid {
			t.Errorf("the stderr line of %s's worker %s is logged with user %v, worker %v: %v", user, wid, rec["user"], rec["worker"], rec)
		}
	}
}
