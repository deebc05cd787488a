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

// toolCall is a tools/call for the policy to decide on, in either era.
type toolCall struct {
	member *pool.Member
	log    *slog.Logger // the caller's: a session's, or the sessionless adapter's requestLog
	id     json.RawMessage
	access policy.Access
	name   string // the body's params.name, read strictly
	// hint is the tool's annotations from the session's last tools/list, if any. A
	// sessionless caller has no list of its own, and a session may call before it lists: a
	// call refused without a hint is decided again on the hint of the worker's current list.
	hint        *policy.Hints
	sessionless bool
}

// toolGate applies the policy to a tools/call. A refused call is audited and counted, and
// answered "unknown tool" when the worker does not list the tool or no scope would unlock it;
// else 403 insufficient_scope naming what would unlock it, with the same text in both eras.
func (g *Gateway) toolGate(ctx context.Context, c toolCall) *wire.Error {
	ctx, span := policySpan(ctx)
	verdict, why := g.opts.Policy.Explain(c.access, c.name, c.hint)
	defer func() { endPolicySpan(span, verdict, why) }()
	if verdict == policy.Allowed {
		return nil
	}
	listed, hint, known := listedTool(ctx, c.member, g.opts.Policy, c.access, c.name, c.log)
	if known && !listed {
		g.metrics.ToolCall("unknown")
		auditCall(c.log, c.name, c.access.ReadOnly, "unknown", 0)
		return c.unknown()
	}
	if c.hint == nil {
		c.hint = hint
		if verdict, why = g.opts.Policy.Explain(c.access, c.name, hint); verdict == policy.Allowed {
			return nil
		}
	}
	g.metrics.ToolCall(verdict.String())
	auditCall(c.log, c.name, c.access.ReadOnly, verdict.String(), 0, slog.String("decided_by", why))
	if verdict == policy.DeniedReadOnly {
		// A session steps up to read-write when a request's token has the write scope
		// (stepUp), so on either era it is the token that decides.
		write := g.opts.Policy.WriteScope()
		return g.insufficientScope(c.id, c.access, []string{write}, "readOnly",
			"tool "+quoteSafe(c.name)+" can change state and this token is read-only; a token with scope "+write+
				" may call it, on this session too: re-authorize to get one (a token refresh cannot add a scope)")
	}
	needed, why := g.forbiddenChallenge(c.access, c.name, c.hint)
	if len(needed) == 0 {
		// Hidden from this token's list, and no scope would show it: as if the worker had no
		// such tool, so that a rule on a role or a group does not tell who may call what.
		return c.unknown()
	}
	return g.insufficientScope(c.id, c.access, needed, "forbidden", why)
}

// unknown is the worker's kind of answer to a tool it does not have: a JSON-RPC error (200)
// on a session, 400 for a sessionless request, whose errors map to HTTP statuses.
func (c toolCall) unknown() *wire.Error {
	status := http.StatusOK
	if c.sessionless {
		status = http.StatusBadRequest
	}
	return &wire.Error{Status: status, Code: jsonrpc.CodeInvalidParams, ID: c.id, Message: "unknown tool " + quoteSafe(c.name)}
}

// listedTool looks name up in the worker's current tool list: whether the worker lists it,
// and the readOnlyHint it gave, if any. known is false when the worker could not tell (an
// error, a timeout, a malformed or endless list): the caller then refuses the call as it
// would refuse a real tool.
func listedTool(ctx context.Context, m *pool.Member, pol *policy.Policy, access policy.Access, name string, log *slog.Logger) (listed bool, hint *policy.Hints, known bool) {
	known = toolPages(ctx, m, func(result json.RawMessage) (bool, error) {
		names, err := policy.ToolNames(result)
		var hints map[string]policy.Hints // as the policy reads them
		if err == nil {
			_, hints, err = pol.FilterToolsList(access, result)
		}
		if err != nil {
			log.Warn("worker's tools/list answer is malformed", "error", err)
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
	ctx, cancel := context.WithTimeout(ctx, toolLookupTimeout)
	defer cancel()
	params := json.RawMessage(`{}`)
	for range toolLookupPages {
		result, ok := m.Ask(ctx, "tools/list", params)
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
