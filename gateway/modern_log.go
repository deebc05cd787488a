package gateway

import (
	"log/slog"
	"time"
)

// modernLog names a modern request's user, worker and era in its lines, as a logger made
// with With would, but binds nothing ahead: With formats its attributes into a handler of its
// own for every request, and a modern request logs one line, its audit, if any.
type modernLog struct {
	l            *slog.Logger
	user, worker string
}

func (ml modernLog) with() *slog.Logger {
	return ml.l.With("user", ml.user, "worker", ml.worker, "era", modernVersion)
}

// Info logs a line of the request (a refusal's audit line): rare, so With is fine here.
func (ml modernLog) Info(msg string, args ...any) { ml.with().Info(msg, args...) }

// audit writes the audit line of a forwarded tools/call: the fields With would have put
// first, then the call's, in one record.
func (ml modernLog) audit(tool string, readOnly bool, outcome string, d time.Duration) {
	logNoPC(ml.l.Handler(), slog.LevelInfo, "audit tools/call",
		slog.String("user", ml.user), slog.String("worker", ml.worker), slog.String("era", modernVersion),
		slog.String("tool", auditTool(tool)), slog.Bool("read_only", readOnly), slog.String("outcome", outcome),
		slog.Duration("duration", d))
}
