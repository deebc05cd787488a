package worker

import (
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

// A worker's stdout lines that gemgate logs, lines that are not JSON-RPC ("chatter", logged
// and skipped) and answers to ids gemgate never sent, count against the worker's log rate
// with its stderr lines (TestStderrFloodIsLoggedAtABoundedRate): a worker that floods its
// stdout gets no more lines into the log than one that floods its stderr. The lines over
// the rate are counted, and the counts logged add up with the lines that were to all the
// worker wrote.
func TestStdoutFloodIsLoggedAtABoundedRate(t *testing.T) {
	const chatter = "worker stdout line is not JSON-RPC; skipped"
	for name, tc := range map[string]struct {
		script string
		msgs   []string // the messages of the flood's lines
		lines  int
	}{
		"chatter": {`yes 'stdout flood line' | head -n 20000`, []string{chatter}, 20000},
		"id never sent": {`yes '{"jsonrpc":"2.0","id":"x","result":{}}' | head -n 20000`,
			[]string{"worker answered an id the gateway never sent; dropped"}, 20000},
		// One rate for both: a worker flooding its stdout and its stderr at once gets no
		// more lines logged than flooding either.
		"chatter and stderr": {`yes 'flood line' | head -n 20000 >&2 & yes 'flood line' | head -n 20000; wait`,
			[]string{chatter, "worker stderr"}, 40000},
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var msgs []string
			var skipped int64
			lines := tc.lines
			p, err := Start(Spec{
				Path: "/bin/sh",
				// The worker lives on with its outputs closed: they end when the flood does,
				// and what was over the rate is counted then, however long the reading takes.
				Args:      []string{"-c", tc.script + "; exec sleep 30 >/dev/null 2>&1"},
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
			if max := workerLogBurst + int(time.Since(start).Seconds()+1)*workerLogRate; logged > max {
				t.Fatalf("%d lines of the worker's stdout flood of %d logged in %v; its stderr would get at most %d",
					logged, lines, time.Since(start).Round(time.Millisecond), max)
			}
			accounted := func() (logged int, total int64) {
				mu.Lock()
				defer mu.Unlock()
				for _, m := range msgs {
					if slices.Contains(tc.msgs, m) {
						logged++
					}
				}
				return logged, int64(logged) + skipped
			}
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if _, total := accounted(); total >= int64(lines) {
					break
				}
			}
			p.Stop()
			if logged, total := accounted(); total != int64(lines) {
				t.Fatalf("%d lines logged and %d counted, %d in all of %d written", logged, total-int64(logged), total, lines)
			}
		})
	}
}
