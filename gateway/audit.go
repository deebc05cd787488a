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

// Every tools/call, allowed or refused, in either era, is audited by auditCall: one line,
// "audit tools/call", with the caller's attributes first (a session's: session, user,
// worker; a sessionless request's: user, worker, era; see callerLog) and then tool,
// read_only, outcome and duration (0 for a call refused before it reached the worker). A
// call the policy refused names what decided it: decided_by, a rule's name ("rule
// editors-only") or the read-only gate's reason.

// auditCall writes the audit line of a tools/call to log, the caller's logger. extra follows
// the common attributes (refused, for a call refused unread).
func auditCall(log *slog.Logger, tool string, readOnly bool, outcome string, d time.Duration, extra ...slog.Attr) {
	log.LogAttrs(context.Background(), slog.LevelInfo, "audit tools/call", append([]slog.Attr{
		slog.String("tool", auditTool(tool)), slog.Bool("read_only", readOnly),
		slog.String("outcome", outcome), slog.Duration("duration", d)}, extra...)...)
}

// auditUnread writes the audit line of a tools/call refused before its tool could be read:
// params the strict reader refused (a name given twice, a key in another case, a lone
// surrogate), the tries at passing one tool to the policy and another to the worker that an
// audit log is there to show. The line has the fields of every audit line, the tool empty
// and the outcome "malformed", and names what was refused; the call is counted with that
// outcome. Nothing else of the message is logged: it was not read. No worker is known yet:
// the line names the user and the session, or the era of a sessionless request.
func (g *Gateway) auditUnread(r *http.Request, msg *jsonrpc.Message, p auth.Principal, sessionlessEra bool, he *wire.Error) {
	if msg.Method != "tools/call" {
		return
	}
	g.metrics.ToolCall("malformed")
	log := g.log.With("user", p.User)
	if sessionlessEra {
		log = log.With("era", sessionless.Version)
	} else {
		log = log.With("session", loggedSessionID(r.Header))
	}
	auditCall(log, "", g.decide(p).ReadOnly, "malformed", 0,
		slog.String("refused", textclip.String(he.Message, 200)))
}

// auditAnswer writes the audit line of a client's answer to a worker's request (elicitation,
// sampling, roots): who answered (the client, with the access of the token it presented:
// read_only), what the worker asked and the access mode of the worker that asked, and what
// became of the answer: "answered" (passed to the worker) or "refused" (the token's access
// does not cover the worker's mode). A request gemgate answers itself, because no client is
// entitled to it, is audited by the pool, with answered_by "gemgate". log carries the user
// and the session or era.
func auditAnswer(log *slog.Logger, a pool.Answered, readOnly bool, outcome string) {
	log.LogAttrs(context.Background(), slog.LevelInfo, "audit worker request",
		slog.String("method", a.Method), slog.String("answered_by", "client"),
		slog.Bool("read_only", readOnly), slog.Bool("worker_read_only", a.WorkerReadOnly),
		slog.String("outcome", outcome))
}
