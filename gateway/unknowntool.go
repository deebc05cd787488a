package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/gemgate/gemgate/gateway/wire"
	textclip "github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/telemetry"
)

// A call the policy refuses is checked against the worker's current tool list: a tool that
// does not exist gets the worker's kind of answer, not a scope challenge that would send the
// client into a re-login over a typo.

const (
	toolLookupTimeout = 10 * time.Second
	toolLookupPages   = 100
)

// toolCall is a tools/call, or by kind a prompt's or resource's request, for the policy.
type toolCall struct {
	member *pool.Member
	log    *slog.Logger // the caller's
	id     json.RawMessage
	access policy.Access
	kind   policy.Kind
	method string // for a prompt or a resource: the request's method, for its audit line
	name   string // the body's params.name (params.uri), read strictly
	// hint is from the tools/list answers the session read (session.hint); without one, the
	// worker's current list may decide.
	hint        *policy.Hints
	sessionless bool
}

// gatedCall is the toolCall of a gated method other than tools/call; false for any other.
func gatedCall(method string, f clientFields) (toolCall, bool) {
	switch {
	case method == "prompts/get", method == "completion/complete" && !f.refResource:
		return toolCall{kind: policy.KindPrompt, method: method, name: f.name}, true
	case method == "resources/read", method == "resources/subscribe", method == "completion/complete" && f.refResource:
		return toolCall{kind: policy.KindResource, method: method, name: f.name}, true
	}
	return toolCall{}, false
}

// gate applies the policy (toolGate) to a session's request; nil for an ungated method.
func (g *Gateway) gate(ctx context.Context, s *session, log *slog.Logger, msg *jsonrpc.Message, f clientFields, access policy.Access, start pool.Identity) *wire.Error {
	if msg.Method == "tools/call" {
		return g.toolGate(ctx, toolCall{member: s.member, log: log, id: msg.ID, access: access, name: f.name, hint: s.hint(f.name)}, &start)
	}
	c, ok := gatedCall(msg.Method, f)
	if !ok {
		return nil
	}
	c.member, c.log, c.id, c.access = s.member, log, msg.ID, access
	return g.toolGate(ctx, c, &start)
}

// sessionlessGate is gate for a 2026-07-28 request other than tools/call.
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
	if v, _ := g.opts.Policy.ExplainKind(c.kind, access, c.name, nil); v == policy.Allowed && c.uriRefusal(g.opts.Policy) == "" {
		return nil // the common case, without making a logger
	}
	c.member, c.log, c.id, c.access, c.sessionless = m, log(), msg.ID, access, true
	return g.toolGate(ctx, c, nil)
}

// toolGate applies the policy to c. A refusal is audited, and unknown when the worker does not
// list it or no scope would unlock it, else 403 naming what would. Resources are not looked
// up: their URIs need not be listed (templates). A tool without a hint is looked up before it
// is allowed when a tool rule reads annotations: the worker's, not MCP's defaults, decide, and
// a lookup that fails refuses the call (503). start is who a worker is started for to look the
// name up when none runs (a session's, whose next request starts one); nil: none is.
func (g *Gateway) toolGate(ctx context.Context, c toolCall, start *pool.Identity) *wire.Error {
	pol := g.opts.Policy
	if why := c.uriRefusal(pol); why != "" {
		c.audit(ctx, g, "refused", slog.String("decided_by", "a URI with "+why))
		return c.badURI(why)
	}
	verdict, why := pol.ExplainKind(c.kind, c.access, c.name, c.hint)
	if verdict == policy.Allowed && (c.kind != policy.KindTool || c.hint != nil || !pol.ReadsAnnotations()) {
		telemetry.Decided(ctx, true, why)
		return nil
	}
	// The worker's list may still decide it: worth a span.
	server := ctx
	ctx, span := telemetry.Decision(ctx)
	defer func() { telemetry.EndDecision(server, span, verdict == policy.Allowed, why) }()
	listed, hint, known := false, (*policy.Hints)(nil), false
	if c.kind != policy.KindResource {
		listed, hint, known = listedItem(ctx, c.member, start, c.kind, c.name, c.log)
	}
	if !known && ctx.Err() != nil {
		// The client went away while the list was read: nothing is decided, nor audited here
		// (postMessage audits it disconnected), and nobody reads this answer.
		verdict = policy.DeniedForbidden
		return &wire.Error{Status: http.StatusServiceUnavailable, Code: jsonrpc.CodeInternalError, ID: c.id, Message: "the client went away"}
	}
	if known && !listed {
		c.audit(ctx, g, "unknown")
		return c.unknown()
	}
	if c.hint == nil && c.kind == policy.KindTool {
		c.hint = hint
		if verdict, why = pol.ExplainKind(c.kind, c.access, c.name, hint); verdict == policy.Allowed {
			if known {
				return nil
			}
			// Allowed on MCP's defaults only, by a rule that reads the annotations the worker's
			// list holds and gemgate could not read: refused, not decided without them.
			verdict, why = policy.DeniedForbidden, "annotations unknown: the worker's tools/list could not be read"
			c.audit(ctx, g, "error", slog.String("decided_by", why))
			return wire.Overloaded(c.id, "tool "+textclip.Quote(c.name)+" is allowed or not by its annotations, and the worker's tool list could not be read; try again",
				workerRetryAfter, nil)
		}
	}
	c.audit(ctx, g, verdict.String(), slog.String("decided_by", why))
	noun := c.kind.String() + " " + textclip.Quote(c.name)
	if verdict == policy.DeniedReadOnly {
		// A session steps up with a write token (stepUp): in either era the token decides. One
		// whose worker keeps its login ends instead: the token is for a new session.
		write := pol.WriteScope()
		what, use := "can change state and this token is read-only", "call"
		if c.kind != policy.KindTool || why != "read-only: not vouched read-only" {
			what, use = "is for read-write tokens only ("+why+")", "use"
		}
		where := "on this session too"
		if g.pool.KeepsLogin() {
			where = "in a new session (this one ends when such a token comes)"
		}
		return g.insufficientScope(c.id, c.access, []string{write}, "readOnly",
			noun+" "+what+"; a token with scope "+write+
				" may "+use+" it, "+where+": re-authorize to get one (a token refresh cannot add a scope)")
	}
	needed, why := g.forbiddenChallenge(c.kind, c.access, c.name, c.hint)
	if len(needed) == 0 {
		// No scope would show it: unknown, so a rule on a role does not tell who may call what.
		return c.unknown()
	}
	return g.insufficientScope(c.id, c.access, needed, "forbidden", why)
}

// audit writes the audit line of a refused call (auditCall for a tool) and counts it.
func (c toolCall) audit(ctx context.Context, g *Gateway, outcome string, extra ...slog.Attr) {
	if c.kind == policy.KindTool {
		g.auditCall(ctx, c.log, c.name, c.access.ReadOnly, outcome, 0, extra...)
		return
	}
	c.log.LogAttrs(ctx, slog.LevelInfo, "audit "+c.method, append([]slog.Attr{
		slog.String(c.kind.String(), auditTool(c.name)), slog.Bool("read_only", c.access.ReadOnly),
		slog.String("outcome", outcome)}, extra...)...)
}

// unknown is the worker's kind of answer to what it lacks, per era.
func (c toolCall) unknown() *wire.Error {
	status, code := http.StatusOK, int64(jsonrpc.CodeInvalidParams)
	if c.sessionless {
		status = http.StatusBadRequest
	}
	if c.kind == policy.KindResource {
		if !c.sessionless {
			code = codeResourceNotFound
		}
		return &wire.Error{Status: status, Code: code, ID: c.id, Message: "Resource not found", // the go-sdk's words
			Data: map[string]any{"uri": c.name}}
	}
	return &wire.Error{Status: status, Code: code, ID: c.id,
		Message: "unknown " + c.kind.String() + " " + textclip.Quote(c.name)}
}

// uriRefusal is why the policy cannot decide on c's URI (policy.URIRefusal); "" for a prompt
// or a tool.
func (c toolCall) uriRefusal(pol *policy.Policy) string {
	if c.kind != policy.KindResource {
		return ""
	}
	return pol.URIRefusal(c.name)
}

// badURI refuses a resource's URI the resource rules could read otherwise than the worker.
func (c toolCall) badURI(why string) *wire.Error {
	status := http.StatusOK
	if c.sessionless {
		status = http.StatusBadRequest
	}
	return &wire.Error{Status: status, Code: jsonrpc.CodeInvalidParams, ID: c.id, Data: map[string]any{"uri": c.name},
		Message: "resource URI " + textclip.Quote(c.name) + " has " + why + ", which a worker may resolve to " +
			"another resource than the resource rules decide on; send the URI in its normal form (RFC 3986 §6.2.2)"}
}

const codeResourceNotFound = -32002 // MCP 2025-x

// listedItem looks name up in the worker's current list; known is false when it could not
// tell, and the call is refused as a real tool's would be. Every page is read: a name listed
// on two pages has the hints of both merged the cautious way, as two listings on one page do.
func listedItem(ctx context.Context, m *pool.Member, start *pool.Identity, k policy.Kind, name string,
	log *slog.Logger) (listed bool, hint *policy.Hints, known bool) {
	method := map[policy.Kind]string{policy.KindTool: "tools/list", policy.KindPrompt: "prompts/list"}[k]
	var merged policy.Hints
	known = listPages(ctx, m, start, method, func(result json.RawMessage) (bool, error) {
		names, hints, err := policy.ListNames(method, result)
		if err != nil {
			log.Warn("worker's "+method+" answer is malformed", "error", err)
			return false, err
		}
		if !slices.Contains(names, name) {
			return false, nil
		}
		h, ok := hints[name] // this page's listings of name, merged
		if !ok {
			h = policy.DefaultHints() // listed without annotations
		}
		if listed {
			h = merged.And(h)
		}
		merged, listed = h, true
		return false, nil
	})
	if listed {
		hint = &merged // MCP's defaults when no listing had annotations: as a nil hint decides
	}
	return listed, hint, known
}

// listPages reads a worker's list page by page, bounded in time and pages, until page is done
// or the list ends; false if it got nowhere that far. With start, a worker is started for it
// when none runs (Member.Ask).
func listPages(ctx context.Context, m *pool.Member, start *pool.Identity, method string, page func(result json.RawMessage) (done bool, err error)) bool {
	ctx, cancel := context.WithTimeout(ctx, toolLookupTimeout)
	defer cancel()
	params := json.RawMessage(`{}`)
	for range toolLookupPages {
		result, ok := m.Ask(ctx, start, method, params)
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
