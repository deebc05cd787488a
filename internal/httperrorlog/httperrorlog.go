// Package httperrorlog is the ErrorLog of gemgate's HTTP servers: net/http's lines, which any
// client can provoke and fill with its own text, clipped and rate limited into gemgate's log.
package httperrorlog

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/gemgate/gemgate/internal/clip"
)

// The lines net/http writes to its servers' ErrorLog are the client's to provoke (a failed
// TLS handshake quotes what the client sent), so each line is clipped to maxHTTPErrorLine
// bytes and all servers' lines together are rate limited (httpErrorLines a second, bursts of
// httpErrorBurst). Dropped lines are counted and the count is logged later.
const (
	maxHTTPErrorLine = 1024
	httpErrorLines   = 1
	httpErrorBurst   = 20
	httpErrorReport  = 10 * time.Second
)

// Log is the ErrorLog of gemgate's HTTP servers: their lines go to gemgate's log at
// warn, clipped and rate limited (see maxHTTPErrorLine).
type Log struct {
	log   *slog.Logger
	limit *rate.Limiter

	mu      sync.Mutex
	skipped int         // lines not logged since the last report
	report  *time.Timer // reports skipped; nil when none is due
}

// New is the error log of servers that log to l.
func New(l *slog.Logger) *Log {
	return &Log{log: l, limit: rate.NewLimiter(httpErrorLines, httpErrorBurst)}
}

// Logger is the *log.Logger for http.Server.ErrorLog; every server given one shares its limit.
func (e *Log) Logger() *log.Logger { return log.New(e, "", 0) }

// Write logs one line of net/http's (log.Logger writes each with one Write).
func (e *Log) Write(p []byte) (int, error) {
	if !e.log.Enabled(context.Background(), slog.LevelWarn) {
		return len(p), nil
	}
	if !e.limit.Allow() {
		e.mu.Lock()
		e.skipped++
		if e.report == nil {
			e.report = time.AfterFunc(httpErrorReport, e.Flush)
		}
		e.mu.Unlock()
		return len(p), nil
	}
	e.Flush()
	e.log.Warn(clip.Bytes(bytes.TrimSuffix(p, []byte("\n")), maxHTTPErrorLine))
	return len(p), nil
}

// Flush logs how many lines were not logged since the last report, if any.
func (e *Log) Flush() {
	e.mu.Lock()
	n := e.skipped
	e.skipped = 0
	if e.report != nil {
		e.report.Stop()
		e.report = nil
	}
	e.mu.Unlock()
	if n > 0 {
		e.log.Warn("HTTP server error log lines not logged: over the rate", "count", n, "per_second", httpErrorLines, "burst", httpErrorBurst)
	}
}
