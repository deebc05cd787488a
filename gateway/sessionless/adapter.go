package sessionless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/telemetry"
)

// Post serves one request of the era, p's, with its token's access: checked by the era's rules
// (era.go), authorized by the same policy as a session's call, and sent to the user's worker
// of that access mode as a short-lived pool caller (call).
func (a *Adapter) Post(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, p auth.Principal, access policy.Access) error {
	switch {
	case msg.IsResponse():
		return wire.BadRequest("a " + Version + " client sends no responses: there are no server-to-client requests")
	case msg.IsNotification():
		// Nothing a sessionless client notifies changes anything: cancellation is closing the
		// request's stream.
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	mr, he := check(r, msg, a.served)
	if he != nil {
		if he.Code != CodeUnsupportedVersion { // a version not served is refused, as in a session
			a.Steps.AuditUnread(r, msg, p, he)
		}
		return he
	}
	progressToken, he := a.Steps.Fields(msg)
	if he != nil {
		he.Status = http.StatusBadRequest
		a.Steps.AuditUnread(r, msg, p, he)
		return he
	}
	if why := a.Pool.SessionlessRefused(); why != "" {
		// One worker per session (starting one per request would be a worker start per call),
		// or a worker whose state between calls needs a session (GemStone): the client falls
		// back to initialize.
		return unsupported(msg, why+": use initialize", a.Legacy, Version)
	}
	id := a.Steps.Identity(r, p, access)
	q := &request{msg: msg, mr: mr, progressToken: progressToken, p: p, access: access, id: id}
	if msg.Method == "subscriptions/listen" {
		if he := a.Steps.DrainRefusal(msg.ID, id); he != nil {
			return he
		}
		return a.listen(w, r, q)
	}
	// A requestState is always gemgate's own (a parked call, or a sessionless worker's state
	// wrapped: bridge_pass.go), checked before anything reaches a worker.
	state, hasState, err := requestStateIn(mr.Params)
	if err != nil {
		he := strictError(msg, err)
		a.Steps.AuditUnread(r, msg, p, he) // as check's refusals: the strict reader's
		return he
	}
	if hasState {
		if !strings.HasPrefix(state, statePrefix) {
			return refusal(msg, jsonrpc.CodeInvalidParams, errStateMalformed.Error()+"; start the request again without it")
		}
		claims, he := a.openState(r.Context(), q, state)
		if he != nil {
			return he
		}
		if !claims.Pass {
			// One round of the bridge: the client's answers to a parked call's questions.
			ctx, span := telemetry.Step(r.Context(), "gemgate.bridge.round", trace.SpanKindInternal)
			defer span.End()
			return a.resume(w, r.WithContext(ctx), q, claims)
		}
		q.pass = &claims
	}
	// A bridge retry (above) is served while draining: its call is parked here, it starts
	// nothing, and no other replica has it. Anything else wants the worker of its token's.
	if he := a.Steps.DrainRefusal(msg.ID, id); he != nil {
		return he
	}
	return a.call(w, r, q)
}

// request is a request of the era that passed its checks.
type request struct {
	msg           *jsonrpc.Message
	mr            checks
	progressToken json.RawMessage // params._meta.progressToken, nil when absent
	p             auth.Principal
	access        policy.Access
	id            pool.Identity
	pass          *stateClaims // a retry of a sessionless worker's input-required result
}

// call attaches the request's caller to the user's worker and forwards the request to it, as
// the worker's era takes it (forWorker). server/discover is answered by gemgate, from the
// worker's own discover answer or its InitializeResult.
func (a *Adapter) call(w http.ResponseWriter, r *http.Request, q *request) error {
	msg := q.msg
	c := newCaller(q.mr.LogLevel)
	m, initResult, err := a.attach(r.Context(), q.id, c, &q.mr)
	if err != nil {
		return a.attachError(msg, err)
	}
	c.member.Store(m)
	detach := true // not when the call is parked for the client's input: the parked call owns m
	defer func() {
		if detach {
			m.Detach()
		}
	}()
	if q.pass != nil && (!m.AttachedSessionless() || m.WorkerID() != q.pass.Worker) {
		return refusal(msg, jsonrpc.CodeInvalidParams, errStateWorkerGone.Error())
	}
	if msg.Method == "server/discover" {
		return a.discover(w, msg, initResult)
	}
	var log *slog.Logger // the audit's: made for a tools/call only
	if msg.Method == "tools/call" {
		if he := a.paramHeaderRefusal(r, q, m); he != nil {
			return he
		}
		log = a.requestLog(r.Context(), q.p, m.WorkerID())
		if he := a.Steps.ToolGate(r.Context(), m, log, msg.ID, q.access, q.mr.Name); he != nil {
			return he
		}
	} else if he := a.Steps.Gate(r.Context(), m, func() *slog.Logger { return a.requestLog(r.Context(), q.p, m.WorkerID()) }, msg, q.access); he != nil {
		return he
	}
	fwd, err := q.forWorker(m.AttachedSessionless())
	if err != nil {
		return strictError(msg, err)
	}
	span, fwd, err := a.Steps.RoundTrip(r.Context(), fwd)
	if err != nil {
		return strictError(msg, err)
	}
	call, err := m.Call(r.Context(), pool.Request{Message: fwd, ProgressToken: q.progressToken, Identity: q.id, Tag: c})
	if err != nil {
		telemetry.EndRoundTrip(span, "error")
		if r.Context().Err() != nil {
			return nil // the client went away before the call was written (attachError)
		}
		return a.Steps.CallError(msg.ID, err)
	}
	pk := &parked{owner: ownerOf(q.p), access: q.access, member: m, caller: c, call: call, msg: msg, name: q.mr.Name,
		declared: declaredCaps(q.mr.Caps), progressToken: q.progressToken}
	detach = !a.await(w, r, pk, span, log, nil)
	return nil
}

// paramHeaderRefusal refuses a tools/call whose Mcp-Param-* headers do not mirror the
// arguments the tool's x-mcp-header binds on m's worker, audited as Mcp-Name's refusal is.
func (a *Adapter) paramHeaderRefusal(r *http.Request, q *request, m *pool.Member) *wire.Error {
	b, ok := a.toolBindings(r.Context(), m, q.mr.Name)
	if !ok || len(b) == 0 {
		return nil
	}
	he := checkParamHeaders(r.Header, q.msg, b)
	if he != nil {
		a.Steps.AuditUnread(r, q.msg, q.p, he) // as Mcp-Name's: a header that does not mirror the body
	}
	return he
}

// forWorker is the request as the worker takes it: passMessageOf or legacyMessageOf.
func (q *request) forWorker(sessionless bool) (*jsonrpc.Message, error) {
	switch {
	case !sessionless:
		return legacyMessageOf(q.msg, q.mr.Params), nil
	case q.pass != nil:
		return passMessageOf(q.msg, q.mr.Params, true, q.pass.WorkerState)
	}
	return passMessageOf(q.msg, q.mr.Params, false, "")
}

// discover answers server/discover from the worker's InitializeResult.
func (a *Adapter) discover(w http.ResponseWriter, msg *jsonrpc.Message, initResult json.RawMessage) error {
	result, err := discoverFromInit(initResult, a.served)
	if err != nil {
		return &wire.Error{Status: http.StatusOK, Code: jsonrpc.CodeInternalError, ID: msg.ID, Message: "the worker's initialize answer is unusable", Cause: err}
	}
	body := (&jsonrpc.Message{ID: msg.ID, Result: result}).Encode()
	a.Steps.Outbound(body)
	wire.WriteBody(w, http.StatusOK, body)
	return nil
}

// defaultClientInfo is the clientInfo of a sessionless request that names none.
var defaultClientInfo = json.RawMessage(`{"name":"gemgate-modern-client","version":"0"}`)

// legacyParams are the initialize params a sessionless request stands for, for the pool: the
// version gemgate speaks with workers (legacy), the client capabilities that decide which worker
// requests the pool may route to this caller, and the client's info.
//
// Written by hand, as json.Marshal wrote it from maps (TestLegacyParamsBytes holds the bytes),
// since every sessionless request makes it.
func legacyParams(mr *checks, legacy string) json.RawMessage {
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
	out = append(append(append(out, `,"protocolVersion":"`...), legacy...), `"}`...)
	return out
}

// legacyMessageOf is a sessionless request as a legacy worker takes it, on check's reading:
// without the io.modelcontextprotocol/ keys of _meta (a dual-era worker would otherwise take it
// as a sessionless request) and the retry and task fields. Everything else keeps its bytes.
func legacyMessageOf(msg *jsonrpc.Message, rp requestParams) *jsonrpc.Message {
	// Spliced, not decoded and encoded again: the arguments may be a megabyte.
	params := rp.Object.Edit(func(key string, v json.RawMessage) json.RawMessage {
		switch key {
		case "inputResponses", "requestState", "task": // gemgate's to answer; no task is asked for
			return nil
		case "_meta":
			if !rp.HasMeta { // null
				return nil
			}
			meta := rp.Meta.Edit(func(k string, v json.RawMessage) json.RawMessage {
				if strings.HasPrefix(k, MetaPrefix) {
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

// attachError is the answer to a request whose worker could not be had; nil when the client
// went away while it waited.
func (a *Adapter) attachError(msg *jsonrpc.Message, err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return a.Steps.AttachError(msg.ID, err)
}
