package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/gateway/wire"
	textclip "github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// auditCall writes the one audit line of every tools/call, in either era, and counts it; extra
// is decided_by for a refusal (a rule's name or the read-only gate's reason), or refused.
func (g *Gateway) auditCall(log *slog.Logger, tool string, readOnly bool, outcome string, d time.Duration, extra ...slog.Attr) {
	g.metrics.ToolCall(outcome)
	log.LogAttrs(context.Background(), slog.LevelInfo, "audit tools/call", append([]slog.Attr{
		slog.String("tool", auditTool(tool)), slog.Bool("read_only", readOnly),
		slog.String("outcome", outcome), slog.Duration("duration", d)}, extra...)...)
}

// auditUnread audits a tools/call the strict reader refused (a try at showing the policy one
// tool and the worker another); nothing of the unread message is logged.
func (g *Gateway) auditUnread(r *http.Request, msg *jsonrpc.Message, p auth.Principal, sessionlessEra bool, he *wire.Error) {
	if msg.Method != "tools/call" {
		return
	}
	log := g.log.With("user", p.User)
	if sessionlessEra {
		log = log.With("era", sessionless.Version)
	} else {
		log = log.With("session", loggedSessionID(r.Header))
	}
	g.auditCall(log, "", g.decide(p).ReadOnly, "malformed", 0,
		slog.String("refused", textclip.String(he.Message, 200)))
}

// auditAnswer audits a client's answer to a worker's request (the pool audits gemgate's own).
func auditAnswer(log *slog.Logger, a pool.Answered, readOnly bool, outcome string) {
	log.LogAttrs(context.Background(), slog.LevelInfo, "audit worker request",
		slog.String("method", a.Method), slog.String("answered_by", "client"),
		slog.Bool("read_only", readOnly), slog.Bool("worker_read_only", a.WorkerReadOnly),
		slog.String("outcome", outcome))
}
