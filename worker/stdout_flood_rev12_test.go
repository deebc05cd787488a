package worker

import (
	"log/slog"
	"sync"
	"testing"
	"time"
)

// A worker's stderr reaches gemgate's log at a bounded rate (TestStderrFloodIsLoggedAtABoundedRate):
// "the log is every user's, audit lines included, and a worker that floods its stderr must
// not flood it too" (stdout.go). The same worker writing the same flood to its stdout, as
// lines that are not JSON-RPC ("chatter", logged and skipped) or as answers to ids gemgate
// never sent, gets every line into the log, one warning each, with no bound: the rate limit
// is bypassed by changing the descriptor.
func TestRev12StdoutChatterFloodIsLoggedAtABoundedRate(t *testing.T) {
	for name, line := range map[string]string{
		"chatter":       `stdout flood line`,
		"id never sent": `{"jsonrpc":"2.0","id":"x","result":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var msgs []string
			var skipped int64
			const lines = 20000
			p, err := Start(Spec{
				Path:      "/bin/sh",
				Args:      []string{"-c", `yes '` + line + `' | head -n 20000; exec sleep 30`},
				StopGrace: 200 * time.Millisecond,
				Logger:    slog.New(recordingHandler{&mu, &msgs, &skipped}),
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Stop)
			start := time.Now()
			time.Sleep(2 * time.Second)
			mu.Lock()
			logged := len(msgs)
			mu.Unlock()
			if max := stderrBurst + int(time.Since(start).Seconds()+1)*stderrLines; logged > max {
				t.Fatalf("%d lines of the worker's stdout flood of %d logged in %v; its stderr would get at most %d",
					logged, lines, time.Since(start).Round(time.Millisecond), max)
			}
		})
	}
}
