package worker

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
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

// A worker that floods its stderr gets a bounded number of lines into gemgate's log, which
// every user's audit lines share; the lines not logged are counted, and the counts logged
// add up with the lines that were to all the worker wrote.
func TestStderrFloodIsLoggedAtABoundedRate(t *testing.T) {
	var mu sync.Mutex
	var msgs []string
	var skipped int64
	const lines = 100000
	p, err := Start(Spec{
		Path:      "/bin/sh",
		Args:      []string{"-c", `yes 'stderr flood line' | head -n 100000 >&2; exec sleep 30`},
		StopGrace: 200 * time.Millisecond,
		Logger:    slog.New(recordingHandler{&mu, &msgs, &skipped}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	count := func() (logged int, total int64) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			if m == "worker stderr" {
				logged++
			}
		}
		return logged, int64(logged) + skipped
	}
	start := time.Now()
	deadline := start.Add(20 * time.Second)
	for {
		if _, total := count(); total == lines {
			break
		}
		if time.Now().After(deadline) {
			_, total := count()
			t.Fatalf("%d lines logged and counted of %d written", total, lines)
		}
		// The count of the lines over the rate is logged with the next line logged: the
		// flood's last lines wait for it, a second or so.
		time.Sleep(20 * time.Millisecond)
		if time.Since(start) > 2*time.Second {
			p.Stop() // stderr ends: what is left is counted
		}
	}
	logged, _ := count()
	if max := workerLogBurst + int(time.Since(start).Seconds()+1)*workerLogRate; logged > max {
		t.Fatalf("%d stderr lines logged in %v, want at most %d", logged, time.Since(start), max)
	}
	if logged < workerLogBurst {
		t.Fatalf("%d stderr lines logged, want the burst of %d at least", logged, workerLogBurst)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(msgs, "\n"), "over the rate") {
		t.Fatal("no line says lines were not logged")
	}
}
