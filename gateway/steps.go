package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/gateway/sessions"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// sessionlessSteps are the core's steps as the 2026-07-28 adapter takes them (sessionless.Steps).
type sessionlessSteps struct{ g *Gateway }

var _ sessionless.Steps = sessionlessSteps{}

func (s sessionlessSteps) Fields(msg *jsonrpc.Message) (string, json.RawMessage, *wire.Error) {
	f, he := readClientFields(msg)
	return f.name, f.progressToken, he
}

func (s sessionlessSteps) Identity(r *http.Request, p auth.Principal, access policy.Access) pool.Identity {
	return poolIdentity(p, access, bearer(r))
}

func (s sessionlessSteps) ToolGate(ctx context.Context, m *pool.Member, log *slog.Logger, id json.RawMessage, access policy.Access, tool string) *wire.Error {
	return s.g.toolGate(ctx, toolCall{member: m, log: log, id: id, access: access, name: tool, sessionless: true})
}

func (s sessionlessSteps) ToolPages(ctx context.Context, m *pool.Member, page func(json.RawMessage) (bool, error)) bool {
	return listPages(ctx, m, "tools/list", page)
}

func (s sessionlessSteps) GrantRefusal(m *pool.Member, p auth.Principal, id json.RawMessage, what string, log *slog.Logger) *wire.Error {
	return s.g.refuseNarrowerGrant(m, p, id, what, log)
}

func (s sessionlessSteps) CallError(id json.RawMessage, err error) *wire.Error {
	return callError(id, err)
}

func (s sessionlessSteps) AttachError(id json.RawMessage, err error) *wire.Error {
	return attachFailed(id, err)
}

func (s sessionlessSteps) AuditCall(log *slog.Logger, tool string, readOnly bool, outcome string, d time.Duration) {
	s.g.metrics.ToolCall(outcome)
	auditCall(log, tool, readOnly, outcome, d)
}

func (s sessionlessSteps) AuditUnread(r *http.Request, msg *jsonrpc.Message, p auth.Principal, he *wire.Error) {
	s.g.auditUnread(r, msg, p, true, he)
}

func (s sessionlessSteps) AuditAnswer(log *slog.Logger, a pool.Answered, readOnly bool, outcome string) {
	auditAnswer(log, a, readOnly, outcome)
}

func (s sessionlessSteps) Stream(w http.ResponseWriter) *wire.SSE { return s.g.newSSE(w) }

func (s sessionlessSteps) Keepalive() func() <-chan time.Time {
	t := s.g.keepaliveTicker()
	return func() <-chan time.Time { return t.C }
}

func (s sessionlessSteps) StreamLife(r *http.Request) (<-chan struct{}, func()) {
	// The stream may listen for hours (see forgetBearer).
	forgetBearer(r.Header)
	return sessions.StreamEnd(r, nil)
}

func (s sessionlessSteps) Outbound(body []byte) { s.g.trace.Outbound("", body) }

func (s sessionlessSteps) RoundTrip(ctx context.Context, msg *jsonrpc.Message) (trace.Span, *jsonrpc.Message, error) {
	return roundTrip(ctx, msg)
}

// Await waits for and writes a 2026-07-28 call's answer (waiting.run).
func (s sessionlessSteps) Await(w http.ResponseWriter, r *http.Request, c *sessionless.Wait) string {
	g := s.g
	wt := &waiting{
		g: g, era: sessionlessWait{c}, call: c.Call, id: c.ID, method: c.Method, access: c.Access,
		log: g.log, member: c.Member, events: c.Events,
		out:      g.newAnswerWriter(w, "", nil, acceptsSSE(r)),
		requests: c.Requests, detached: c.Detached, gone: r.Context().Done(),
	}
	return wt.run()
}

// sessionlessWait is the 2026-07-28 waitEra.
type sessionlessWait struct{ c *sessionless.Wait }

func (e sessionlessWait) answer(resp *jsonrpc.Message, _ map[string]policy.Hints) (*jsonrpc.Message, string) {
	resp = e.c.Result(resp)
	return e.c.Answer(resp, callOutcome(e.c.Method, resp))
}

func (e sessionlessWait) errorStatus(resp *jsonrpc.Message) (int, bool) {
	return e.c.ErrorStatus(resp), true
}

func (e sessionlessWait) park(req *jsonrpc.Message) (*jsonrpc.Message, bool) { return e.c.Park(req) }

func (e sessionlessWait) clientGone() (string, string) {
	return "client closed the request's stream", "cancelled"
}

func (e sessionlessWait) timedOut() {}
