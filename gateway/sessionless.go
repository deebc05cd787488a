package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/gateway/wire"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// sessionlessPost is the sessionless adapter (2026-07-28): the request is checked by its
// era's rules (sessionless/era.go), then authorized by the same policy as a session's call, routed
// to the user's worker (the one the user's sessions of the same access mode use) as a
// short-lived pool caller, and answered (sessionlessCall).
func (g *Gateway) sessionlessPost(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, p auth.Principal, access policy.Access) error {
	switch {
	case msg.IsResponse():
		return wire.BadRequest("a " + sessionless.Version + " client sends no responses: there are no server-to-client requests")
	case msg.IsNotification():
		// Nothing a sessionless client notifies changes what gemgate does: cancellation is
		// closing the request's stream.
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	mr, he := sessionless.Check(r, msg, servedVersions)
	if he != nil {
		g.auditUnread(r, msg, p, true, he)
		return he
	}
	fields, he := sessionlessFields(msg, mr)
	if he != nil {
		he.Status = http.StatusBadRequest
		g.auditUnread(r, msg, p, true, he)
		return he
	}
	if g.pool.PerSession() {
		// One worker per session: a sessionless request has no worker of its own, and
		// starting one per request would be a worker start per call.
		return sessionless.Refusal(msg, http.StatusBadRequest, sessionless.CodeUnsupportedVersion,
			"this gateway runs one worker per session (worker_per: session): use initialize",
			map[string]any{"supported": supportedVersions, "requested": mr.Version})
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
	state, hasState, err := requestStateIn(mr.Params)
	if err != nil {
		return sessionless.StrictError(msg, err)
	}
	q := &sessionlessRequest{msg: msg, mr: mr, fields: fields, p: p, access: access, id: id, hasState: hasState}
	if hasState {
		if !strings.HasPrefix(state, sessionless.StatePrefix) {
			return sessionless.Refusal(msg, http.StatusBadRequest, jsonrpc.CodeInvalidParams, sessionless.ErrStateMalformed.Error()+"; start the request again without it", nil)
		}
		claims, he := g.openState(msg, mr, p, access.ReadOnly, state)
		if he != nil {
			return he
		}
		if !claims.Pass {
			return g.resumeSessionless(w, r, msg, p, access, claims)
		}
		q.pass = &claims
	}
	return g.sessionlessCall(w, r, q)
}

// sessionlessRequest is a sessionless request that passed its era's checks.
type sessionlessRequest struct {
	msg      *jsonrpc.Message
	mr       *sessionless.Checks
	fields   clientFields
	p        auth.Principal
	access   policy.Access
	id       pool.Identity
	hasState bool
	pass     *sessionless.Claims // a retry of a sessionless worker's input-required result
}

// sessionlessCall attaches the request's caller to the user's worker and forwards the request
// to it. A sessionless worker takes the request as it is (the pool remaps the id); a legacy
// one gets it as a legacy request of gemgate's session with it. server/discover is answered
// by gemgate for both, from the worker's own discover answer or its InitializeResult.
func (g *Gateway) sessionlessCall(w http.ResponseWriter, r *http.Request, q *sessionlessRequest) error {
	msg := q.msg
	c := newSessionlessCaller(q.mr.LogLevel != "")
	m, initResult, err := g.attachSessionless(r.Context(), q.id, c, q.mr)
	if err != nil {
		return sessionlessAttachError(msg, err)
	}
	c.member.Store(m)
	detach := true // not when the call is parked for the client's input: the parked call owns m
	defer func() {
		if detach {
			m.Detach()
		}
	}()
	if q.pass != nil && (!m.SessionlessWorker() || m.WorkerID() != q.pass.Worker) {
		return sessionless.Refusal(msg, http.StatusBadRequest, jsonrpc.CodeInvalidParams, errStateWorkerGone.Error(), nil)
	}
	if msg.Method == "server/discover" {
		return g.discover(w, msg, initResult)
	}
	var log *slog.Logger // the audit's: made for a tools/call only
	if msg.Method == "tools/call" {
		if b, ok := g.toolBindings(r.Context(), m, q.fields.tool); ok && len(b) > 0 {
			if he := sessionless.CheckParamHeaders(r.Header, msg, b); he != nil {
				return he
			}
		}
		log = g.sessionlessLog(q.p, m.WorkerID())
		tc := toolCall{member: m, log: log, id: msg.ID, access: q.access, name: q.fields.tool, sessionless: true}
		if he := g.toolGate(r.Context(), tc); he != nil {
			return he
		}
	}
	fwd, err := q.forWorker(m.SessionlessWorker())
	if err != nil {
		return sessionless.StrictError(msg, err)
	}
	call, err := m.Call(r.Context(), pool.Request{Message: fwd, ProgressToken: q.fields.progressToken, Identity: q.id, Tag: c})
	if errors.Is(err, pool.ErrDetached) {
		return wire.Overloaded(msg.ID, "the worker is gone; try again", workerRetryAfter, err)
	}
	if err != nil {
		return callError(msg.ID, err)
	}
	started := time.Now()
	pk := &parked{owner: ownerOf(q.p), access: q.access, member: m, caller: c, call: call, msg: msg, name: q.mr.Name}
	outcome, parkedNow := g.awaitSessionless(w, r, pk)
	detach = !parkedNow
	if msg.Method == "tools/call" {
		g.metrics.toolCall(outcome)
		auditCall(log, q.fields.tool, q.access.ReadOnly, outcome, time.Since(started))
	}
	return nil
}

// forWorker is the request as the worker takes it: a sessionless worker's with its state
// unwrapped (passMessageOf), a legacy worker's without the 2026-07-28 fields (legacyMessageOf).
func (q *sessionlessRequest) forWorker(sessionless bool) (*jsonrpc.Message, error) {
	if !sessionless {
		return legacyMessageOf(q.msg, q.mr.Params), nil
	}
	ws := ""
	if q.pass != nil {
		ws = q.pass.WorkerState
	}
	return passMessageOf(q.msg, q.mr.Params, q.hasState, ws)
}

// discover answers server/discover from the worker's InitializeResult.
func (g *Gateway) discover(w http.ResponseWriter, msg *jsonrpc.Message, initResult json.RawMessage) error {
	result, err := discoverFromInit(initResult)
	if err != nil {
		return &wire.Error{Status: http.StatusOK, Code: jsonrpc.CodeInternalError, ID: msg.ID, Message: "the worker's initialize answer is unusable", Cause: err}
	}
	body := (&jsonrpc.Message{ID: msg.ID, Result: result}).Encode()
	g.trace.outbound("", body)
	wire.WriteBody(w, http.StatusOK, body)
	return nil
}

// defaultClientInfo is the clientInfo of a sessionless request that names none.
var defaultClientInfo = json.RawMessage(`{"name":"gemgate-modern-client","version":"0"}`)

// legacyParams are the initialize params a sessionless request stands for, for the pool: the
// version gemgate speaks with workers, the client capabilities that decide which worker
// requests the pool may route to this caller (for the bridge), and the client's info.
//
// It is written by hand, as json.Marshal wrote it from maps (keys in order, the client's info
// compacted and HTML-escaped; TestLegacyParamsBytes holds the bytes), since every sessionless
// request makes it.
func legacyParams(mr *sessionless.Checks) json.RawMessage {
	info := defaultClientInfo
	if mr.ClientInfo != nil {
		info = mr.ClientInfo
	}
	if bytes.ContainsAny(info, " \t\r\n<>&\u2028\u2029") {
		info, _ = json.Marshal(info) // compacts and escapes, as it did inside the whole
	}
	out := make([]byte, 0, 128+len(info))
	out = append(out, `{"capabilities":{`...)
	first := true
	for _, k := range []string{"elicitation", "roots", "sampling"} { // a map's keys, sorted
		if mr.Caps.Has(k) {
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

// legacyMessageOf is a sessionless request as a legacy worker takes it, on the params
// checkSessionless read: the io.modelcontextprotocol/ keys of _meta are removed (the worker was
// initialized by gemgate; a dual-era worker would otherwise take the request as a
// sessionless one). Everything else keeps its bytes. It cannot fail: the reading was the
// only step that could.
func legacyMessageOf(msg *jsonrpc.Message, rp sessionless.Params) *jsonrpc.Message {
	// Spliced, not decoded and encoded again: the arguments may be a megabyte.
	params := rp.Object.Edit(func(key string, v json.RawMessage) json.RawMessage {
		switch key {
		case "inputResponses", "requestState": // the retry fields are gemgate's to answer (bridge.go)
			return nil
		case "task": // a task is not asked of the worker (sessionless_worker.go)
			return nil
		case "_meta":
			if !rp.HasMeta { // null
				return nil
			}
			meta := rp.Meta.Edit(func(k string, v json.RawMessage) json.RawMessage {
				if strings.HasPrefix(k, sessionless.MetaPrefix) {
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

// toolBindings are the x-mcp-header bindings of tool at m's worker; ok is false when the
// worker's list could not be read (then nothing is checked: the headers decide nothing).
func (g *Gateway) toolBindings(ctx context.Context, m *pool.Member, tool string) ([]sessionless.ParamBinding, bool) {
	now := time.Now()
	if tools, ok := g.paramSchemas.Get(m.WorkerID(), now); ok {
		return tools[tool], true
	}
	tools := map[string][]sessionless.ParamBinding{}
	read := toolPages(ctx, m, func(result json.RawMessage) (bool, error) {
		sessionless.BindingsFrom(result, tools)
		// A nextCursor that is no string ends the list here: the bindings read so far are
		// checked, never none at all.
		var page struct {
			NextCursor string `json:"nextCursor"`
		}
		return json.Unmarshal(result, &page) != nil, nil
	})
	if !read {
		return nil, false
	}
	g.paramSchemas.Put(m.WorkerID(), tools, now)
	return tools[tool], true
}

// servedVersions are every revision gemgate serves on its endpoint, newest first: the sessionless
// one per request, the legacy ones through initialize.
var servedVersions = append([]string{sessionless.Version}, supportedVersions...)
