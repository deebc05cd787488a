package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/telemetry"
)

// A call the policy refuses is checked against the worker's own tool list before it is
// answered: a tool that does not exist gets the worker's kind of answer (-32602 "unknown
// tool"), not a scope challenge that would send the client into a re-login over a typo. The
// list is asked for afresh each time, so a tool added or removed since is seen as it is now;
// a client can ask for the list itself anyway, so this costs it nothing it could not spend.

const (
	// toolLookupTimeout bounds how long a refused call waits for the worker's list.
	toolLookupTimeout = 10 * time.Second
	// toolLookupPages bounds how many pages of the list are read.
	toolLookupPages = 100
)

// toolCall is a tools/call for the policy to decide on, in either era; or, by its kind, a
// prompts/get (name is the prompt's), a resources/read or resources/subscribe (name is the
// resource's URI) or a completion/complete of either's argument, which the same gate decides.
type toolCall struct {
	member *pool.Member
	log    *slog.Logger // the caller's: a session's, or the sessionless adapter's requestLog
	id     json.RawMessage
	access policy.Access
	kind   policy.Kind
	method string // for a prompt or a resource: the request's method, for its audit line
	name   string // the body's params.name (params.uri), read strictly
	// hint is the tool's annotations from the session's last tools/list, if any. A
	// sessionless caller has no list of its own, and a session may call before it lists: a
	// call refused without a hint is decided again on the hint of the worker's current list.
	hint        *policy.Hints
	sessionless bool
}

// gatedCall is the toolCall of a prompts/get, resources/read, resources/subscribe or
// completion/complete whose params.name, params.uri or params.ref is f's name; false for
// any other method.
func gatedCall(method string, f clientFields) (toolCall, bool) {
	switch {
	case method == "prompts/get", method == "completion/complete" && !f.refResource:
		return toolCall{kind: policy.KindPrompt, method: method, name: f.name}, true
	case method == "resources/read", method == "resources/subscribe", method == "completion/complete" && f.refResource:
		return toolCall{kind: policy.KindResource, method: method, name: f.name}, true
	}
	return toolCall{}, false
}

// gate applies the policy to a session's request: a tools/call, prompts/get,
// resources/read, resources/subscribe or completion/complete (toolGate); nil for any other.
func (g *Gateway) gate(ctx context.Context, s *session, log *slog.Logger, msg *jsonrpc.Message, f clientFields, access policy.Access) *wire.Error {
	if msg.Method == "tools/call" {
		return g.toolGate(ctx, toolCall{member: s.member, log: log, id: msg.ID, access: access, name: f.name, hint: s.hint(f.name)})
	}
	c, ok := gatedCall(msg.Method, f)
	if !ok {
		return nil
	}
	c.member, c.log, c.id, c.access = s.member, log, msg.ID, access
	return g.toolGate(ctx, c)
}

// sessionlessGate is gate for a 2026-07-28 request to m's worker (sessionless.Steps.Gate): a
// prompts/get, resources/read, resources/subscribe or completion/complete; nil for any other.
// What it decides on is read as a session's is (readClientFields).
func (g *Gateway) sessionlessGate(ctx context.Context, m *pool.Member, log func() *slog.Logger, msg *jsonrpc.Message, access policy.Access) *wire.Error {
	if _, gated := gatedKey[msg.Method]; !gated {
		return nil
	}
	f, he := readClientFields(msg)
	if he != nil {
		he.Status = http.StatusBadRequest
		return he
	}
	c, ok := gatedCall(msg.Method, f)
	if !ok {
		return nil
	}
	if v, _ := g.opts.Policy.ExplainKind(c.kind, access, c.name, nil); v == policy.Allowed {
		return nil // the common case, without a logger made for it
	}
	c.member, c.log, c.id, c.access, c.sessionless = m, log(), msg.ID, access, true
	return g.toolGate(ctx, c)
}

// toolGate applies the policy to a tools/call (or a prompt's or a resource's request, by
// c.kind). A refused call is audited and counted, and answered as the worker answers what it
// does not have ("unknown tool") when the worker does not list it or no scope would unlock
// it; else 403 insufficient_scope naming what would unlock it, with the same text in both
// eras. A resource is not looked up: its URIs need not all be listed (templates).
func (g *Gateway) toolGate(ctx context.Context, c toolCall) *wire.Error {
	pol := g.opts.Policy
	verdict, why := pol.ExplainKind(c.kind, c.access, c.name, c.hint)
	if verdict == policy.Allowed {
		telemetry.Decided(ctx, true, why)
		return nil
	}
	// Not allowed at once: what the worker lists may still decide it, which is worth a span.
	server := ctx
	ctx, span := telemetry.Decision(ctx)
	defer func() { telemetry.EndDecision(server, span, verdict == policy.Allowed, why) }()
	listed, hint, known := false, (*policy.Hints)(nil), false
	if c.kind != policy.KindResource {
		listed, hint, known = listedItem(ctx, c.member, pol, c.kind, c.access, c.name, c.log)
	}
	if known && !listed {
		c.audit(g, "unknown")
		return c.unknown()
	}
	if c.hint == nil && c.kind == policy.KindTool {
		c.hint = hint
		if verdict, why = pol.ExplainKind(c.kind, c.access, c.name, hint); verdict == policy.Allowed {
			return nil
		}
	}
	c.audit(g, verdict.String(), slog.String("decided_by", why))
	noun := c.kind.String() + " " + quoteSafe(c.name)
	if verdict == policy.DeniedReadOnly {
		// A session steps up to read-write when a request's token has the write scope
		// (stepUp), so on either era it is the token that decides.
		write := pol.WriteScope()
		what, use := "can change state and this token is read-only", "call"
		if c.kind != policy.KindTool || why != "read-only: not vouched read-only" {
			what, use = "is for read-write tokens only ("+why+")", "use"
		}
		return g.insufficientScope(c.id, c.access, []string{write}, "readOnly",
			noun+" "+what+"; a token with scope "+write+
				" may "+use+" it, on this session too: re-authorize to get one (a token refresh cannot add a scope)")
	}
	needed, why := g.forbiddenChallenge(c.kind, c.access, c.name, c.hint)
	if len(needed) == 0 {
		// Hidden from this token's list, and no scope would show it: as if the worker had no
		// such tool, so that a rule on a role or a group does not tell who may call what.
		return c.unknown()
	}
	return g.insufficientScope(c.id, c.access, needed, "forbidden", why)
}

// audit writes the audit line of a refused call and counts it: a tools/call's (auditCall),
// or the line of a refused prompt's or resource's request, which names the prompt or the URI.
func (c toolCall) audit(g *Gateway, outcome string, extra ...slog.Attr) {
	if c.kind == policy.KindTool {
		g.metrics.ToolCall(outcome)
		auditCall(c.log, c.name, c.access.ReadOnly, outcome, 0, extra...)
		return
	}
	c.log.LogAttrs(context.Background(), slog.LevelInfo, "audit "+c.method, append([]slog.Attr{
		slog.String(c.kind.String(), auditTool(c.name)), slog.Bool("read_only", c.access.ReadOnly),
		slog.String("outcome", outcome)}, extra...)...)
}

// unknown is the worker's kind of answer to a tool or prompt it does not have: a JSON-RPC
// error (200) on a session, 400 for a sessionless request, whose errors map to HTTP
// statuses. A resource's is -32002 on a session (MCP 2025-x's resource not found), -32602
// for a sessionless request (2026-07-28's).
func (c toolCall) unknown() *wire.Error {
	status, code := http.StatusOK, int64(jsonrpc.CodeInvalidParams)
	if c.sessionless {
		status = http.StatusBadRequest
	}
	if c.kind == policy.KindResource {
		if !c.sessionless {
			code = codeResourceNotFound
		}
		return &wire.Error{Status: status, Code: code, ID: c.id, Message: "resource not found",
			Data: map[string]any{"uri": c.name}}
	}
	return &wire.Error{Status: status, Code: code, ID: c.id, Message: "unknown " + c.kind.String() + " " + quoteSafe(c.name)}
}

// codeResourceNotFound is MCP 2025-x's error code for a resource the server does not have.
const codeResourceNotFound = -32002

// listedItem looks name up in the worker's current tool (or prompt) list: whether the worker
// lists it, and the annotations it gave a tool, if any. known is false when the worker could
// not tell (an error, a timeout, a malformed or endless list): the caller then refuses the
// call as it would refuse a real tool.
func listedItem(ctx context.Context, m *pool.Member, pol *policy.Policy, k policy.Kind, access policy.Access, name string, log *slog.Logger) (listed bool, hint *policy.Hints, known bool) {
	method := map[policy.Kind]string{policy.KindTool: "tools/list", policy.KindPrompt: "prompts/list"}[k]
	known = listPages(ctx, m, method, func(result json.RawMessage) (bool, error) {
		names, err := policy.ListNames(method, result)
		var hints map[string]policy.Hints // as the policy reads them
		if err == nil {
			_, hints, err = pol.FilterList(method, access, result)
		}
		if err != nil {
			log.Warn("worker's "+method+" answer is malformed", "error", err)
			return false, err
		}
		if slices.Contains(names, name) {
			listed = true
			if h, ok := hints[name]; ok {
				hint = &h
			}
		}
		return listed, nil
	})
	return listed, hint, known
}

// toolPages asks m's worker for its tool list page by page, bounded in time and pages, and
// hands each page's result to page until page has what it needs (done) or the list ends. It
// reports whether the list was read that far: not when the worker did not answer in time,
// page refused a page, a page's nextCursor was malformed, or the list did not end.
func toolPages(ctx context.Context, m *pool.Member, page func(result json.RawMessage) (done bool, err error)) bool {
	return listPages(ctx, m, "tools/list", page)
}

// listPages is toolPages for the list method (tools/list, prompts/list).
func listPages(ctx context.Context, m *pool.Member, method string, page func(result json.RawMessage) (done bool, err error)) bool {
	ctx, cancel := context.WithTimeout(ctx, toolLookupTimeout)
	defer cancel()
	params := json.RawMessage(`{}`)
	for range toolLookupPages {
		result, ok := m.Ask(ctx, method, params)
		if !ok {
			return false
		}
		if done, err := page(result); err != nil || done {
			return err == nil
		}
		obj, err := jsonrpc.ReadObject(result, "result")
		if err != nil {
			return false
		}
		cursor, more, err := obj.String("nextCursor")
		if err != nil {
			return false
		}
		if !more || cursor == "" {
			return true
		}
		params, _ = json.Marshal(map[string]string{"cursor": cursor})
	}
	return false
}
