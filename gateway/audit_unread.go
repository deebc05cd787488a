package gateway

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/gemgate/gemgate/auth"
	textclip "github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/jsonrpc"
)

// auditUnread writes the audit line of a tools/call refused before its tool could be read:
// params the strict reader refused (a name given twice, a key in another case, a lone
// surrogate), the tries at passing one tool to the policy and another to the worker that an
// audit log is there to show. The line has the fields of every audit line, the tool empty
// and the outcome "malformed", and names what was refused; the call is counted with that
// outcome. Nothing else of the message is logged: it was not read.
func (g *Gateway) auditUnread(r *http.Request, msg *jsonrpc.Message, p auth.Principal, era string, he *httpError) {
	if msg.Method != "tools/call" {
		return
	}
	g.metrics.toolCall("malformed")
	attrs := []slog.Attr{slog.String("user", p.User)}
	if era != "" {
		attrs = append(attrs, slog.String("era", era))
	} else {
		attrs = append(attrs, slog.String("session", loggedSessionID(r.Header)))
	}
	logNoPC(g.log.Handler(), slog.LevelInfo, "audit tools/call", append(attrs,
		slog.String("tool", ""), slog.Bool("read_only", g.opts.Policy.Decide(p.Scopes).ReadOnly),
		slog.String("outcome", "malformed"), slog.Duration("duration", time.Duration(0)),
		slog.String("refused", textclip.String(he.Message, 200)))...)
}
