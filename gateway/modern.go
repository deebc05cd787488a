package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// modernPost handles one POST of the 2026-07-28 era: checked (modern_era.go), authorized by
// the same policy as a legacy call, then routed to the user's worker (the one the user's
// legacy sessions of the same access mode use) as a short-lived pool caller, and answered.
func (g *Gateway) modernPost(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, p auth.Principal) error {
	switch {
	case msg.IsResponse():
		return badRequest("a " + modernVersion + " client sends no responses: there are no server-to-client requests")
	case msg.IsNotification():
		// Nothing a modern client notifies changes what gemgate does: cancellation is closing
		// the request's stream.
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	mr, he := checkModern(r, msg)
	if he != nil {
		g.auditUnread(r, msg, p, modernVersion, he)
		return he
	}
	fields, he := modernFields(msg, mr)
	if he != nil {
		he.Status = http.StatusBadRequest
		g.auditUnread(r, msg, p, modernVersion, he)
		return he
	}
	access := g.opts.Policy.Decide(p.Scopes)
	if missing := access.Missing(); len(missing) > 0 {
		return g.insufficientScope(msg.ID, access, missing, "forbidden", "missing required scopes")
	}
	if g.pool.PerSession() {
		// One worker per legacy session: a sessionless request has no worker of its own, and
		// starting one per request would be a worker start per call.
		return modernError(msg, http.StatusBadRequest, codeUnsupportedVersion,
			"this gateway runs one worker per session (worker_per: session): use initialize",
			map[string]any{"supported": supportedVersions, "requested": mr.version})
	}
	id := poolIdentity(p, access, bearer(r))
	if he := g.drainRefusal(msg.ID, id); he != nil {
		return he
	}
	if msg.Method == "subscriptions/listen" {
		return g.listen(w, r, msg, mr, p, id)
	}
	// A requestState is always gemgate's own: a parked call of the bridge, or a sessionless
	// worker's state wrapped (bridge_pass.go). It is checked before anything reaches a worker.
	state, hasState, err := requestStateIn(mr.params)
	if err != nil {
		return strictError(msg, err)
	}
	var pass *stateClaims // a retry of a sessionless worker's input-required result
	if hasState {
		if !strings.HasPrefix(state, statePrefix) {
			return modernError(msg, http.StatusBadRequest, jsonrpc.CodeInvalidParams, errStateMalformed.Error()+"; start the request again without it", nil)
		}
		claims, he := g.openState(msg, mr, ownerOf(p), access.ReadOnly, state)
		if he != nil {
			return he
		}
		if !claims.Pass {
			return g.resumeModern(w, r, msg, p, access, claims)
		}
		pass = &claims
	}
	c := newModernCaller(mr.logLevel != "")
	m, initResult, err := g.attachModern(r.Context(), id, c, mr)
	if err != nil {
		return modernAttachError(msg, err)
	}
	c.member.Store(m)
	detach := true // not when the call is parked for the client's input: the parked call owns m
	defer func() {
		if detach {
			m.Detach()
		}
	}()
	log := modernLog{l: g.log, user: p.User, worker: m.WorkerID()}

	// A sessionless worker takes the request as it is (the pool remaps the id); a legacy one
	// gets it as a legacy request of gemgate's session with it. server/discover is answered
	// by gemgate for both, from the worker's own discover answer or its InitializeResult.
	sessionless := m.SessionlessWorker()
	if pass != nil && (!sessionless || m.WorkerID() != pass.Worker) {
		return modernError(msg, http.StatusBadRequest, jsonrpc.CodeInvalidParams, errStateWorkerGone.Error(), nil)
	}
	if msg.Method == "server/discover" {
		result, err := discoverFromInit(initResult)
		if err != nil {
			return &httpError{Status: http.StatusOK, Code: jsonrpc.CodeInternalError, ID: msg.ID, Message: "the worker's initialize answer is unusable", Cause: err}
		}
		body := (&jsonrpc.Message{ID: msg.ID, Result: result}).Encode()
		g.trace.outbound("", body)
		writeBody(w, http.StatusOK, body)
		return nil
	}
	if msg.Method == "tools/call" {
		if b, ok := g.toolBindings(r.Context(), m, fields.tool); ok && len(b) > 0 {
			if he := checkParamHeaders(r.Header, msg, b); he != nil {
				return he
			}
		}
		if he := g.modernToolGate(r.Context(), m, msg, access, fields.tool, log); he != nil {
			return he
		}
	}
	var fwd *jsonrpc.Message
	if sessionless {
		ws := ""
		if pass != nil {
			ws = pass.WorkerState
		}
		fwd, err = passMessageOf(msg, mr.params, hasState, ws)
		if err != nil {
			return strictError(msg, err)
		}
	} else {
		fwd = legacyMessageOf(msg, mr.params)
	}
	call, err := m.Call(r.Context(), pool.Request{Message: fwd, ProgressToken: fields.progressToken, Identity: id, Tag: c})
	if err != nil {
		if errors.Is(err, pool.ErrDetached) {
			return overloaded(msg.ID, "the worker is gone; try again", workerRetryAfter, err)
		}
		return callError(msg.ID, err)
	}
	started := time.Now()
	pk := &parked{owner: ownerOf(p), access: access, member: m, caller: c, call: call, msg: msg, name: mr.name}
	outcome, parkedNow := g.awaitModern(w, r, c, call, msg, access, pk)
	detach = !parkedNow
	if msg.Method == "tools/call" {
		g.metrics.toolCall(outcome)
		log.audit(fields.tool, access.ReadOnly, outcome, time.Since(started))
	}
	return nil
}

// defaultClientInfo is the clientInfo of a modern request that names none.
var defaultClientInfo = json.RawMessage(`{"name":"gemgate-modern-client","version":"0"}`)

// legacyParams are the initialize params a modern request stands for, for the pool: the
// version gemgate speaks with workers, the client capabilities that decide which worker
// requests the pool may route to this caller (for the bridge), and the client's info.
//
// It is written by hand, as json.Marshal wrote it from maps (keys in order, the client's info
// compacted and HTML-escaped; TestLegacyParamsBytes holds the bytes), since every modern
// request makes it.
func legacyParams(mr *modernRequest) json.RawMessage {
	info := defaultClientInfo
	if mr.clientInfo != nil {
		info = mr.clientInfo
	}
	if bytes.ContainsAny(info, " \t\r\n<>&\u2028\u2029") {
		info, _ = json.Marshal(info) // compacts and escapes, as it did inside the whole
	}
	out := make([]byte, 0, 128+len(info))
	out = append(out, `{"capabilities":{`...)
	first := true
	for _, k := range []string{"elicitation", "roots", "sampling"} { // a map's keys, sorted
		if mr.caps.Has(k) {
			if !first {
				out = append(out, ',')
			}
			first = false
			out = append(append(append(out, '"'), k...), `":{}`...)
		}
	}
	out = append(append(out, `},"clientInfo":`...), info...)
	out = append(append(append(out, `,"protocolVersion":"`...), supportedVersions[0]...), `"}`...)
	return out
}

// poolCaps are the capabilities legacyParams declares, as pool.ClientCapabilities reads them
// from its bytes (TestPoolCapsAgreeWithLegacyParams): the pool need not read them again.
func (mr *modernRequest) poolCaps() pool.Capabilities {
	return pool.Capabilities{Sampling: mr.caps.Has("sampling"), Elicitation: mr.caps.Has("elicitation"), Roots: mr.caps.Has("roots")}
}

// legacyMessage is a modern request as a legacy worker takes it: the io.modelcontextprotocol/
// keys of _meta are removed (the worker was initialized by gemgate; a dual-era worker would
// otherwise take the request as a sessionless one). Everything else keeps its bytes.
func legacyMessage(msg *jsonrpc.Message) (*jsonrpc.Message, error) {
	rp, err := readRequestParams(msg)
	if err != nil {
		return nil, err
	}
	if !rp.present {
		_, err := msg.EditParams(nil) // absent or null params: the error an edit of them gives
		return nil, err
	}
	return legacyMessageOf(msg, rp), nil
}

// legacyMessageOf is legacyMessage on the params checkModern read. It cannot fail: the
// reading was the only step that could.
func legacyMessageOf(msg *jsonrpc.Message, rp requestParams) *jsonrpc.Message {
	// Spliced, not decoded and encoded again: the arguments may be a megabyte.
	params := rp.params.Edit(func(key string, v json.RawMessage) json.RawMessage {
		switch key {
		case "inputResponses", "requestState": // the retry fields are gemgate's to answer (bridge.go)
			return nil
		case "task": // a task is not asked of the worker (modern_worker.go)
			return nil
		case "_meta":
			if !rp.hasMeta { // null
				return nil
			}
			meta := rp.meta.Edit(func(k string, v json.RawMessage) json.RawMessage {
				if strings.HasPrefix(k, metaPrefix) {
					return nil
				}
				return v
			})
			if string(meta) == "{}" {
				return nil
			}
			return meta
		}
		return v
	})
	out := *msg
	out.Params = params
	return &out
}

// modernToolGate applies the policy to a modern tools/call, on the body's tool name. A call
// refused without the tool's readOnlyHint is decided again with the worker's current list,
// which also tells an unknown tool (the worker's kind of error) from a forbidden one.
func (g *Gateway) modernToolGate(ctx context.Context, m *pool.Member, msg *jsonrpc.Message, access policy.Access, name string, log interface {
	Info(string, ...any)
}) *httpError {
	verdict := g.opts.Policy.CheckTool(access, name, nil)
	if verdict == policy.Allowed {
		return nil
	}
	hints, exists, known := workerToolHints(ctx, m, g.opts.Policy, access, name)
	var hint *bool
	if h, ok := hints[name]; ok {
		hint = &h
	}
	if known && !exists {
		g.metrics.toolCall("unknown")
		log.Info("audit tools/call", "tool", auditTool(name), "read_only", access.ReadOnly, "outcome", "unknown")
		return &httpError{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidParams, ID: msg.ID, Message: "unknown tool " + quoteSafe(name)}
	}
	if verdict = g.opts.Policy.CheckTool(access, name, hint); verdict == policy.Allowed {
		return nil
	}
	g.metrics.toolCall(verdict.String())
	log.Info("audit tools/call", "tool", auditTool(name), "read_only", access.ReadOnly, "outcome", verdict.String())
	if verdict == policy.DeniedReadOnly {
		write := g.opts.Policy.WriteScope()
		return g.insufficientScope(msg.ID, access, []string{write}, "readOnly",
			"tool "+quoteSafe(name)+" can change state and this token is read-only; only a token with scope "+write+" may call it")
	}
	needed, why := g.forbiddenChallenge(access, name, hint)
	return g.insufficientScope(msg.ID, access, needed, "forbidden", why)
}

// workerToolHints reads the worker's tool list (bounded in time and pages) for the hints of
// its tools and whether name is one of them; known is false when the worker could not tell.
func workerToolHints(ctx context.Context, m *pool.Member, pol *policy.Policy, access policy.Access, name string) (hints map[string]bool, exists, known bool) {
	ctx, cancel := context.WithTimeout(ctx, toolLookupTimeout)
	defer cancel()
	hints = map[string]bool{}
	params := json.RawMessage(`{}`)
	for range toolLookupPages {
		result, ok := m.Ask(ctx, "tools/list", params)
		if !ok {
			return hints, false, false
		}
		_, h, err := pol.FilterToolsList(access, result)
		if err != nil {
			return hints, false, false
		}
		for k, v := range h {
			hints[k] = v
		}
		names, err := policy.ToolNames(result)
		if err != nil {
			return hints, false, false
		}
		exists = exists || slices.Contains(names, name)
		page, err := jsonrpc.ReadObject(result, "result")
		if err != nil {
			return hints, false, false
		}
		cursor, more, err := page.String("nextCursor")
		if err != nil {
			return hints, false, false
		}
		if !more || cursor == "" {
			return hints, exists, true
		}
		params, _ = json.Marshal(map[string]string{"cursor": cursor})
	}
	return hints, false, false
}

// modernAttachError answers a modern request whose worker could not be had.
func modernAttachError(msg *jsonrpc.Message, err error) error {
	var rate *rateError
	var refused *pool.RefusedError
	switch {
	case errors.As(err, &rate):
		return tooManyRequests(msg.ID, "your worker is being started too often; wait before the next request", rate.wait)
	case errors.Is(err, pool.ErrTooManyWorkers):
		return overloaded(msg.ID, err.Error(), workerRetryAfter, nil)
	case errors.Is(err, pool.ErrClosed):
		return overloaded(msg.ID, "the gateway is shutting down", shutdownRetryAfter, nil)
	case errors.Is(err, pool.ErrInitTimeout):
		return overloaded(msg.ID, "the worker did not start in time", workerRetryAfter, nil)
	case errors.Is(err, context.Canceled):
		return nil
	case errors.As(err, &refused):
		var e struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(refused.Answer, &e)
		return &httpError{Status: http.StatusServiceUnavailable, Code: jsonrpc.CodeInternalError, ID: msg.ID,
			Message: "the worker refused to start: " + clipText(e.Message)}
	}
	return overloaded(msg.ID, "could not start a worker for this request", workerRetryAfter, err)
}

func clipText(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
