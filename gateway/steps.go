package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/gateway/sessions"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// sessionlessSteps are the core's steps as the 2026-07-28 adapter takes them.
func (g *Gateway) sessionlessSteps() sessionless.Steps {
	return sessionless.Steps{
		Fields: func(msg *jsonrpc.Message) (json.RawMessage, *wire.Error) {
			f, he := readClientFields(msg)
			return f.progressToken, he
		},
		Identity: func(r *http.Request, p auth.Principal, access policy.Access) pool.Identity {
			return poolIdentity(p, access, bearer(r))
		},
		DrainRefusal: g.drainRefusal,
		ToolGate: func(ctx context.Context, m *pool.Member, log *slog.Logger, id json.RawMessage, access policy.Access, tool string) *wire.Error {
			return g.toolGate(ctx, toolCall{member: m, log: log, id: id, access: access, name: tool, sessionless: true}, nil)
		},
		Gate: g.sessionlessGate,
		ToolPages: func(ctx context.Context, m *pool.Member, page func(json.RawMessage) (bool, error)) bool {
			return listPages(ctx, m, nil, "tools/list", page)
		},
		GrantRefusal:   g.grantRefusal,
		GrantRefusalOf: g.grantRefusalOf,
		ReadOnlyAnswer: g.readOnlyAnswerRefusal,
		CallError: func(id json.RawMessage, err error) *wire.Error {
			if errors.Is(err, pool.ErrDetached) { // no session to be gone: the worker is
				return wire.Overloaded(id, "the worker is gone; try again", workerRetryAfter, err)
			}
			return callError(id, err)
		},
		AttachError: attachFailed,
		Await:       g.awaitSessionless,
		AuditUnread: func(r *http.Request, msg *jsonrpc.Message, p auth.Principal, he *wire.Error) {
			g.auditUnread(r, msg, p, true, he)
		},
		AuditAnswer: auditAnswer,
		StreamLife: func(r *http.Request) (<-chan struct{}, func()) {
			forgetBearer(r.Header) // the stream may listen for hours (see forgetBearer)
			return sessions.StreamEnd(r, nil)
		},
		Outbound:  func(body []byte) { g.trace.Outbound("", body) },
		RoundTrip: roundTrip,
	}
}

// awaitSessionless waits for and writes a 2026-07-28 call's answer, and ends the call (waiting.run).
func (g *Gateway) awaitSessionless(w http.ResponseWriter, r *http.Request, c *sessionless.Wait) {
	wt := &waiting{
		g: g, era: c, call: c.Call, id: c.ID, method: c.Method, access: c.Access,
		log: g.log, member: c.Member, events: c.Events,
		out:  g.newAnswerWriter(w, "", nil, acceptsSSE(r)),
		span: c.Span, audit: c.Log, tool: c.Tool,
		requests: c.Requests, detached: c.Detached, gone: r.Context().Done(),
	}
	wt.run(r)
}
