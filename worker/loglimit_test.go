package worker

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recordingHandler keeps the messages of the records logged, with their count attribute.
type recordingHandler struct {
	mu   *sync.Mutex
	msgs *[]string
	n    *int64
}

func (h recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.msgs = append(*h.msgs, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "count" {
			*h.n += a.Value.Int64()
		}
		return true
	})
	return nil
}
func (h recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordingHandler) WithGroup(string) slog.Handler      { return h }

// floodLog is what a flooding worker's lines made of gemgate's log so far.
type floodLog struct {
	mu      sync.Mutex
	msgs    []string // the message of every line logged
	counted int64    // the lines over the rate that logged counts name
}

func (l *floodLog) handler() slog.Handler { return recordingHandler{&l.mu, &l.msgs, &l.counted} }

// lines are the lines logged whose message is one of msgs, and the lines counted.
func (l *floodLog) lines(msgs ...string) (logged int, counted int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.msgs {
		if slices.Contains(msgs, m) {
			logged++
		}
	}
	return logged, l.counted
}

// waitAllRead waits until every one of the lines p's worker wrote is logged (as one of msgs),
// counted in a logged count, or over the rate and waiting for the next count: read, all of
// them.
func waitAllRead(t *testing.T, p *Process, log *floodLog, lines int, msgs ...string) {
	t.Helper()
	waitLines(t, log, lines, func() int {
		p.logged.mu.Lock()
		defer p.logged.mu.Unlock()
		return p.logged.skipped
	}, msgs...)
}

// waitLines waits until the lines logged (as one of msgs), the lines counted in logged counts
// and waiting() make all the lines the worker wrote.
func waitLines(t *testing.T, log *floodLog, lines int, waiting func() int, msgs ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		logged, counted := log.lines(msgs...)
		if total := logged + int(counted) + waiting(); total == lines {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%d lines logged or counted of %d written", total, lines)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stopAndCount stops p's worker: its outputs end, and the lines left over the rate are
// counted in a last count, which waitLines waits for (stderr may end after Stop returns).
func stopAndCount(t *testing.T, p *Process, log *floodLog, lines int, msgs ...string) {
	t.Helper()
	p.Stop()
	waitLines(t, log, lines, func() int { return 0 }, msgs...)
}

// checkRate fails unless the worker's lines logged are at least the burst and at most what
// the rate allows over elapsed, and the counts of the lines over it were logged at least
// minCounts times, and at most once a second of elapsed and at the end of each output.
func checkRate(t *testing.T, log *floodLog, elapsed time.Duration, minCounts int, msgs ...string) {
	t.Helper()
	logged, _ := log.lines(msgs...)
	counts, _ := log.lines("worker lines not logged: over the rate")
	secs := int(elapsed.Seconds())
	if max := workerLogBurst + (secs+1)*workerLogRate; logged > max || logged < workerLogBurst {
		t.Errorf("%d of the worker's lines logged in %v, want %d to %d", logged, elapsed, workerLogBurst, max)
	}
	if counts < minCounts || counts > secs+3 {
		t.Errorf("the lines over the rate were counted in %d lines over %v, want %d to %d", counts, elapsed, minCounts, secs+3)
	}
}

// Every line a worker causes goes through LogQuoting: over a flood that lasts two seconds
// (of a bubble's time, no test waits for it), as many lines are logged as the rate allows,
// and the lines over it are counted once a second and once at the end of the output.
func TestLogRateOverTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log floodLog
		p := &Process{log: slog.New(log.handler()), logged: newLogLimit()}
		const lines = 20000
		start := time.Now()
		for range lines {
			p.LogQuoting(slog.LevelInfo, "worker stderr", "line", []byte("flood line"))
			time.Sleep(100 * time.Microsecond)
		}
		p.logSkipped(true) // as at the end of the worker's stderr
		elapsed := time.Since(start)
		if logged, counted := log.lines("worker stderr"); logged+int(counted) != lines {
			t.Errorf("%d lines logged and %d counted, want %d together", logged, counted, lines)
		}
		checkRate(t, &log, elapsed, 3, "worker stderr")
	})
}

// A worker that floods its stderr gets a bounded number of lines into gemgate's log, which
// every user's audit lines share; the lines not logged are counted, and the counts logged
// add up with the lines that were to all the worker wrote.
func TestStderrFloodIsLoggedAtABoundedRate(t *testing.T) {
	var log floodLog
	const lines = 100000
	start := time.Now()
	p, err := Start(Spec{
		Path:      "/bin/sh",
		Args:      []string{"-c", `yes 'stderr flood line' | head -n 100000 >&2; exec cat >/dev/null`},
		StopGrace: 200 * time.Millisecond,
		Logger:    slog.New(log.handler()),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	waitAllRead(t, p, &log, lines, "worker stderr")
	stopAndCount(t, p, &log, lines, "worker stderr")
	checkRate(t, &log, time.Since(start), 1, "worker stderr")
}

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
			var log floodLog
			start := time.Now()
			p, err := Start(Spec{
				Path:      "/bin/sh",
				Args:      []string{"-c", tc.script + "; exec cat >/dev/null"},
				StopGrace: 200 * time.Millisecond,
				Logger:    slog.New(log.handler()),
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Stop)
			waitAllRead(t, p, &log, tc.lines, tc.msgs...)
			stopAndCount(t, p, &log, tc.lines, tc.msgs...)
			checkRate(t, &log, time.Since(start), 1, tc.msgs...)
		})
	}
}
