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
func (g *Gateway) auditCall(ctx context.Context, log *slog.Logger, tool string, readOnly bool, outcome string, d time.Duration, extra ...slog.Attr) {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		info.audited.Store(true)
	}
	g.metrics.ToolCall(outcome)
	log.LogAttrs(ctx, slog.LevelInfo, "audit tools/call", append([]slog.Attr{
		slog.String("tool", auditTool(tool)), slog.Bool("read_only", readOnly),
		slog.String("outcome", outcome), slog.Duration("duration", d)}, extra...)...)
}

// auditUnread audits a tools/call the strict reader refused (a try at showing the policy one
// tool and the worker another); nothing of the unread message is logged.
func (g *Gateway) auditUnread(r *http.Request, msg *jsonrpc.Message, p auth.Principal, sessionlessEra bool, he *wire.Error) {
	if msg.Method != "tools/call" {
		return
	}
	g.auditUnweighed(r, p, sessionlessEra, "malformed", he.Message)
}

// auditUnweighed writes the audit line of a tools/call whose tool was not read: no tool, no
// worker, the outcome and why it was refused.
func (g *Gateway) auditUnweighed(r *http.Request, p auth.Principal, sessionlessEra bool, outcome, why string) {
	log := g.log.With("user", p.User)
	if sessionlessEra {
		log = log.With("era", sessionless.Version)
	} else {
		log = log.With("session", loggedSessionID(r.Header))
	}
	g.auditCall(r.Context(), log, "", g.decide(p).ReadOnly, outcome, 0, slog.String("refused", textclip.String(why, 200)))
}

// auditRefused audits a tools/call that no step audited: refused before its tool was weighed
// (a drain, a full worker table, the session's call cap, an unknown session, …) or given up
// by its client before it reached the worker (its request's context ended: nobody gets the
// refusal, whatever it says). Every tools/call gets its one audit line.
func (g *Gateway) auditRefused(r *http.Request, msg *jsonrpc.Message, p auth.Principal, err error) {
	if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); !ok || info.audited.Load() {
		return
	}
	outcome, why := "disconnected", "the client went away before the call reached the worker"
	if err != nil && r.Context().Err() == nil {
		outcome, why = "refused", err.Error()
		if he, ok := err.(*wire.Error); ok {
			why = he.Message
			if he.Status == http.StatusForbidden { // the token's scopes or grant
				outcome = "forbidden"
			}
		}
	}
	g.auditUnweighed(r, p, sessionless.Is(r, msg), outcome, why)
}

// auditAnswer audits a client's answer to a worker's request (the pool audits gemgate's own).
func auditAnswer(log *slog.Logger, a pool.Answered, readOnly bool, outcome string) {
	log.LogAttrs(context.Background(), slog.LevelInfo, "audit worker request",
		slog.String("method", a.Method), slog.String("answered_by", "client"),
		slog.Bool("read_only", readOnly), slog.Bool("worker_read_only", a.WorkerReadOnly),
		slog.String("outcome", outcome))
}
