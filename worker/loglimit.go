//go:build linux

package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Every line a worker causes in gemgate's log shares one rate limit: the log is every user's,
// audit lines included, and one worker must not flood it. Lines over the rate are counted,
// and the count is logged at most once a second and at the end of the worker's output.
const (
	workerLogRate  = 50
	workerLogBurst = 200
	countEvery     = time.Second
)

// logLimit is one worker's share of the log.
type logLimit struct {
	lim     *rate.Limiter
	mu      sync.Mutex
	skipped int       // lines over the rate since the last count was logged
	counted time.Time // when the last count was logged
}

func newLogLimit() logLimit {
	return logLimit{lim: rate.NewLimiter(workerLogRate, workerLogBurst)}
}

// allow reports whether a line the worker caused, at level, is logged now; one over the rate
// is counted instead. A line at a level the log leaves out takes nothing of the rate.
func (p *Process) allow(level slog.Level) bool {
	if !p.log.Enabled(context.Background(), level) {
		return false
	}
	l := &p.logged
	if !l.lim.Allow() {
		l.mu.Lock()
		l.skipped++
		l.mu.Unlock()
		return false
	}
	p.logSkipped(false)
	return true
}

// logSkipped logs how many lines were over the rate, if any: at most once a second, or
// whenever final (an output of the worker's has ended).
func (p *Process) logSkipped(final bool) {
	l := &p.logged
	now := time.Now()
	l.mu.Lock()
	n := l.skipped
	if n == 0 || (!final && now.Sub(l.counted) < countEvery) {
		l.mu.Unlock()
		return
	}
	l.skipped, l.counted = 0, now
	l.mu.Unlock()
	p.log.Warn("worker lines not logged: over the rate", "count", n, "per_second", workerLogRate)
}

// LogQuoting logs msg at level, with key quoting worker text redacted and clipped (snippet).
// An error among args is redacted too: one about the text may quote it (a parser's refusal
// names a repeated key). The line counts against the worker's log rate.
func (p *Process) LogQuoting(level slog.Level, msg, key string, text []byte, args ...any) {
	if !p.allow(level) {
		return
	}
	out := make([]any, 0, 2+len(args))
	out = append(out, key, p.snippet(text))
	for _, a := range args {
		if err, ok := a.(error); ok {
			a = string(p.Redacted([]byte(err.Error())))
		}
		out = append(out, a)
	}
	p.log.Log(context.Background(), level, msg, out...)
}
