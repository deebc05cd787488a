package gateway

import (
	"log/slog"

	"github.com/gemgate/gemgate/pool"
)

// auditAnswer writes the audit line of a client's answer to a worker's request (elicitation,
// sampling, roots): who answered (the client, with the access of the token it presented:
// read_only), what the worker asked and the access mode of the worker that asked, and what
// became of the answer: "answered" (passed to the worker) or "refused" (the token's access
// does not cover the worker's mode). A request gemgate answers itself, because no client is
// entitled to it, is audited by the pool, with answered_by "gemgate". log carries the user
// and the session or era.
func auditAnswer(log *slog.Logger, a pool.Answered, readOnly bool, outcome string) {
	logNoPC(log.Handler(), slog.LevelInfo, "audit worker request",
		slog.String("method", a.Method), slog.String("answered_by", "client"),
		slog.Bool("read_only", readOnly), slog.Bool("worker_read_only", a.WorkerReadOnly),
		slog.String("outcome", outcome))
}
