package sessions

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// Log is a session's logger: its lines name the session, the user and the worker. The worker
// changes on step-up while other goroutines log, so the handler is swapped atomically
// (reassigning a *slog.Logger would race; With again would print the key twice). It keeps only
// the handler of the moment and the root: every idle session holds one.
type Log struct {
	root          slog.Handler // the gateway's, shared; nothing of this session's
	session, user string
	h             atomic.Pointer[slog.Handler]
}

func NewLog(root *slog.Logger, session, user string) (*Log, *slog.Logger) {
	l := &Log{root: root.Handler(), session: session, user: user}
	l.set()
	return l, slog.New(l)
}

func (l *Log) SetWorker(id string) { l.set(slog.String("worker", id)) }

func (l *Log) set(extra ...slog.Attr) {
	h := l.root.WithAttrs(append([]slog.Attr{slog.String("session", l.session), slog.String("user", l.user)}, extra...))
	l.h.Store(&h)
}

func (l *Log) current() slog.Handler { return *l.h.Load() }

func (l *Log) Enabled(ctx context.Context, level slog.Level) bool {
	return l.current().Enabled(ctx, level)
}

func (l *Log) Handle(ctx context.Context, r slog.Record) error { return l.current().Handle(ctx, r) }

// A logger derived for one call keeps the worker that call runs on.
func (l *Log) WithAttrs(attrs []slog.Attr) slog.Handler { return l.current().WithAttrs(attrs) }
func (l *Log) WithGroup(name string) slog.Handler       { return l.current().WithGroup(name) }
