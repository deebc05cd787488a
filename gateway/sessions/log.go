package sessions

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// Log is a session's logger: its lines name the session, the user and the worker. The
// worker changes on step-up while other goroutines (the stream, the reaper, calls in flight)
// log through the same logger, so the logger is fixed once and its handler swapped
// atomically; reassigning a *slog.Logger field would race, and adding the worker with With
// again would print the key twice.
//
// Every idle session holds one, so it keeps one handler with the attributes preformatted (the
// one of the moment) and the gateway's own, not a second copy without the worker to derive
// the next from: a handler derived With attributes copies itself and its preformatted text.
type Log struct {
	root          slog.Handler // the gateway's, shared; nothing of this session's
	session, user string
	h             atomic.Pointer[slog.Handler]
}

// NewLog is the handler of a session's lines and the logger that writes through it.
func NewLog(root *slog.Logger, session, user string) (*Log, *slog.Logger) {
	l := &Log{root: root.Handler(), session: session, user: user}
	l.set()
	return l, slog.New(l)
}

// SetWorker names the session's worker in every line logged from now on.
func (l *Log) SetWorker(id string) { l.set(slog.String("worker", id)) }

// set makes the handler of the moment: the root's, with the session, the user and extra.
func (l *Log) set(extra ...slog.Attr) {
	h := l.root.WithAttrs(append([]slog.Attr{slog.String("session", l.session), slog.String("user", l.user)}, extra...))
	l.h.Store(&h)
}

func (l *Log) current() slog.Handler { return *l.h.Load() }

func (l *Log) Enabled(ctx context.Context, level slog.Level) bool {
	return l.current().Enabled(ctx, level)
}

func (l *Log) Handle(ctx context.Context, r slog.Record) error {
	return l.current().Handle(ctx, r)
}

// WithAttrs and WithGroup derive from the handler of the moment: a logger derived for one
// call keeps the worker that call runs on.
func (l *Log) WithAttrs(attrs []slog.Attr) slog.Handler { return l.current().WithAttrs(attrs) }
func (l *Log) WithGroup(name string) slog.Handler       { return l.current().WithGroup(name) }
