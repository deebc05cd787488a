package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/metrics"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/internal/aside"
	textclip "github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/telemetry"
)

const headerSessionID = "Mcp-Session-Id"

func (g *Gateway) handlePost(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &wire.StatusRecorder{ResponseWriter: w}
	// Only the headers outlive g.post: a listen stream runs under this frame for hours, and
	// the request's context holds the bearer token.
	h := r.Header
	q := telemetry.RequestFrom(r.Context()) // nil when tracing is off
	method, err := g.post(rec, r)
	if err != nil {
		g.postFailed(rec, h, q, err)
	}
	g.metrics.Request(method, rec.Status(), time.Since(start), q.TraceID())
}

// postFailed answers a failed POST; out of handlePost's frame (TestIdleStreamStackNeverDoubles).
func (g *Gateway) postFailed(w http.ResponseWriter, h http.Header, q *telemetry.Request, err error) {
	var he *wire.Error
	if !errors.As(err, &he) {
		he = &wire.Error{Status: http.StatusInternalServerError, Code: jsonrpc.CodeInternalError, Message: "internal error", Cause: err}
	}
	q.Error(he.Code)
	if he.Cause != nil || he.Status >= 500 {
		q.Log(g.log).Warn("request failed", "status", he.Status, "error", he.Error(), "session", loggedSessionID(h))
	}
	if g.trace != nil {
		g.trace.Outbound(loggedSessionID(h), errorBody(he))
	}
	he.Write(w)
}

// post handles one POST; it returns the method's metrics label with the error to answer.
func (g *Gateway) post(w http.ResponseWriter, r *http.Request) (string, error) {
	if he := checkPostHeaders(r); he != nil {
		return "other", he
	}
	body, err := g.readBody(w, r)
	if err != nil {
		return "other", err
	}
	if g.trace != nil {
		g.traceInbound(r, body)
	}
	msg, err := jsonrpc.Parse(body, jsonrpc.Options{Client: true, Owned: true}) // body is this request's alone, and never written again
	if err != nil {
		if errors.Is(err, jsonrpc.ErrInvalid) {
			return "other", &wire.Error{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}
		}
		return "other", &wire.Error{Status: http.StatusBadRequest, Code: jsonrpc.CodeParseError, Message: "parse error: the body is not one JSON-RPC message"}
	}
	msg.ID = ownID(msg.ID)
	r = beginSpan(r, msg)
	return metrics.MethodLabel(msg.Method), g.postMessage(w, r, msg)
}

// ownID is a copy of a request's id, which outlives its body: a call its client gave up keeps
// it for as long as the worker has not answered (pool's keepAbandonedLocked), and so does the
// worker's pending call; neither may keep the whole body (up to max_body_bytes). Not inlined:
// post's frame stays under a listen stream's (TestIdleListenStackNeverDoubles).
//
//go:noinline
func ownID(id json.RawMessage) json.RawMessage { return bytes.Clone(id) }

// postMessage decides the message's era, once, after refusing a token without required scopes.
func (g *Gateway) postMessage(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message) (err error) {
	p, _ := auth.PrincipalFrom(r.Context())
	if msg.IsRequest() && msg.Method == "tools/call" {
		defer func() { g.auditRefused(r, msg, p, err) }()
	}
	decided := g.decide(p) // the token's access; a session narrows it (forward)
	if msg.IsRequest() && len(decided.Missing()) > 0 {
		return g.insufficientScope(msg.ID, decided, decided.Missing(), "forbidden", "missing required scopes")
	}
	if sessionless.Is(r, msg) {
		return g.sessionless.Post(w, r, msg, p, decided)
	}
	return g.sessionPost(w, r, msg, p, decided)
}

// sessionPost is the 2025-x adapter; its frame stays out from under an idle listen stream
// (TestIdleListenStackNeverDoubles).
func (g *Gateway) sessionPost(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, p auth.Principal, decided policy.Access) error {
	// Every field decided on is read strictly first: an ambiguous message never reaches a worker.
	fields, he := readClientFields(msg)
	if he != nil {
		g.auditUnread(r, msg, p, false, he)
		return he
	}
	if he := checkKind(msg); he != nil {
		return he
	}
	initialize := msg.IsRequest() && msg.Method == "initialize"
	sessionID := r.Header.Get(headerSessionID)
	if !initialize && sessionID == "" {
		return noSessionError(msg)
	}
	if fields.eraMeta {
		return eraMetaError(msg)
	}
	if initialize {
		var err error
		aside.Run(func() { err = g.initialize(w, r, msg, p) }) // the connection may go on to idle
		return err
	}
	s, he := g.sessionOf(r, msg, p, sessionID)
	if he != nil {
		return he
	}
	switch {
	case msg.IsRequest():
		return g.forward(w, r, s, msg, fields, p, decided)
	case msg.IsNotification():
		if he := g.narrowedRefusal(s, p, "a notification to the worker"); he != nil && !s.cancelsReadOnlyCall(msg, fields) {
			return he
		}
		g.notification(r.Context(), s, msg, fields)
	default:
		if he := g.clientAnswer(s, msg, p, decided); he != nil {
			return he
		}
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

func noSessionError(msg *jsonrpc.Message) *wire.Error {
	if msg.IsRequest() && msg.Method == "server/discover" {
		// The 2026-07-28 probe: a plain JSON-RPC error makes a dual-era client fall back.
		return &wire.Error{Status: http.StatusOK, Code: jsonrpc.CodeMethodNotFound, ID: msg.ID,
			Message: "server/discover is not supported; use initialize"}
	}
	e := wire.BadRequest("missing Mcp-Session-Id header; send initialize first")
	e.ID = msg.ID
	return e
}

// sessionOf is p's session sessionID, touched; or 404, 400 (version) or 403 (grant, untouched).
func (g *Gateway) sessionOf(r *http.Request, msg *jsonrpc.Message, p auth.Principal, sessionID string) (*session, *wire.Error) {
	s := g.sessions.Lookup(sessionID, ownerOf(p))
	if s == nil {
		return nil, wire.SessionNotFound(msg.ID)
	}
	if err := checkProtocolVersion(r); err != nil {
		err.ID = msg.ID
		return nil, err
	}
	if s.over() { // gone, whatever the token: not a grant to retry with
		return nil, wire.SessionNotFound(msg.ID)
	}
	// Refused for its grant, a request is not the session's activity (as a GET is not): no touch.
	if he := g.grantRefusal(s.member, p, msg.ID, metrics.MethodLabel(msg.Method), s.log); he != nil {
		return nil, he
	}
	if !s.isProbeAnswer(msg) && !s.touch(time.Now()) {
		return nil, wire.SessionNotFound(msg.ID)
	}
	return s, nil
}

// clientAnswer passes the client's answer to a worker's request, if its token may.
func (g *Gateway) clientAnswer(s *session, msg *jsonrpc.Message, p auth.Principal, decided policy.Access) *wire.Error {
	if he := g.narrowedRefusal(s, p, "answering the worker's request"); he != nil {
		auditAnswer(s.log, pool.Answered{}, true, "refused")                   // not looked up: method unknown
		return g.readOnlyAnswerRefusal(nil, s.currentAccess().Narrow(decided)) // a 2026-07-28 retry's text
	}
	if err := s.clientResponse(msg, decided.ReadOnly); errors.Is(err, pool.ErrNotEntitled) {
		return g.readOnlyAnswerRefusal(nil, s.currentAccess().Narrow(decided))
	}
	return nil
}

// readOnlyAnswerRefusal refuses a read-only token's answer to a read-write worker's question,
// alike in both eras: a session's answer (clientAnswer), a 2026-07-28 retry of a call parked
// on such a worker (the era's Steps.ReadOnlyAnswer).
func (g *Gateway) readOnlyAnswerRefusal(id json.RawMessage, access policy.Access) *wire.Error {
	write := g.opts.Policy.WriteScope()
	return g.insufficientScope(id, access, []string{write}, "readOnly",
		"the worker that asked is read-write and this token may only read: answering it needs a token with scope "+write)
}

// checkKind refuses a request named notifications/… and a notification named otherwise: either
// would pass unchecked, and a server may act on the method whatever the id (the go-sdk does).
func checkKind(msg *jsonrpc.Message) *wire.Error {
	notificationName := strings.HasPrefix(msg.Method, "notifications/")
	switch {
	case msg.IsRequest() && notificationName:
		return &wire.Error{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest, ID: msg.ID,
			Message: "a request named " + textclip.Quote(msg.Method) + ": notifications carry no id"}
	case msg.IsNotification() && !notificationName:
		return &wire.Error{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest,
			Message: "a notification named " + textclip.Quote(msg.Method) + ": requests carry an id"}
	}
	return nil
}

// eraMetaError refuses a session's message whose _meta names 2026-07-28: its worker (the
// go-sdk decides per request) would take it as sessionless, past gemgate's checks of that era.
func eraMetaError(msg *jsonrpc.Message) *wire.Error {
	return &wire.Error{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest, ID: msg.ID,
		Message: "params._meta names " + sessionless.MetaProtocolVersion + ", which no message of a session carries: " +
			"a 2026-07-28 request goes without Mcp-Session-Id, with MCP-Protocol-Version: 2026-07-28"}
}

// readBody reads the body, up to MaxBodyBytes, into a buffer the parsed message keeps.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := readDeclared(http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes), r.ContentLength, g.opts.MaxBodyBytes)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &wire.Error{Status: http.StatusRequestEntityTooLarge, Code: jsonrpc.CodeInvalidRequest,
				Message: "request body over the limit"}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, &wire.Error{Status: http.StatusRequestTimeout, Code: jsonrpc.CodeParseError,
				Message: "the request body did not arrive within the read timeout"}
		}
		return nil, &wire.Error{Status: http.StatusBadRequest, Code: jsonrpc.CodeParseError, Message: "could not read the request body", Cause: err}
	}
	return body, nil
}

// notification passes a client's notification to the session's worker; with tracing on, with
// the request's trace context in place of the client's, as a request's (roundTrip).
func (g *Gateway) notification(ctx context.Context, s *session, msg *jsonrpc.Message, f clientFields) {
	if msg.Method == "notifications/cancelled" {
		if f.cancelID != nil {
			if !s.cancelCall(f.cancelID, f.cancelReason) {
				s.log.Debug("client cancelled a request that is not in flight")
			}
		}
		return
	}
	fwd, err := wire.WithTraceMeta(msg, telemetry.RequestFrom(ctx).WorkerMeta(ctx))
	if err == nil {
		err = s.member.Notify(fwd)
	}
	if err != nil {
		s.log.Warn("could not pass a notification to the worker", "method", textclip.String(msg.Method, maxAuditTool), "error", err)
	}
}

// forward passes a request to the session's worker and answers it (await).
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, s *session, msg *jsonrpc.Message, f clientFields, p auth.Principal, decided policy.Access) error {
	if he := g.stepUp(r, s, msg.ID, p, decided); he != nil {
		return he
	}
	if he := g.narrowedRequest(s, p, msg); he != nil {
		return he
	}
	access := s.currentAccess().Narrow(decided)
	log := telemetry.RequestFrom(r.Context()).Log(s.log) // with the trace id when traced
	identity := g.identity(r, p, access, s)
	if he := g.gate(r.Context(), s, log, msg, f, access, identity); he != nil {
		return he
	}
	inf, he := s.startCall(msg.ID, acceptsSSE(r), access.ReadOnly, g.opts.Lifetime.MaxCallsPerSession)
	if he != nil {
		return he
	}
	defer s.endCall(inf)
	span, fwd, err := roundTrip(r.Context(), msg)
	if err != nil {
		return fieldError(msg, err)
	}
	call, err := s.member.Call(r.Context(), pool.Request{Message: fwd, ProgressToken: f.progressToken, Identity: identity, Tag: inf})
	if err != nil {
		telemetry.EndRoundTrip(span, "error")
		if r.Context().Err() != nil {
			return nil // the client went away before the call was written (as attachError)
		}
		return callError(msg.ID, err)
	}
	s.setCall(inf, call)
	inf.worker = call.WorkerID() // the one started for it, if its predecessor had died
	g.await(w, r, s, inf, msg.Method, access, span, log, f.name)
	return nil
}

// hint is the annotations the worker gave a tool in the tools/list answers the session read
// since it last forgot them (learnHints), merged; nil if none, or if they are another
// worker's (one that died, whose successor may list its tools otherwise).
func (s *session) hint(name string) *policy.Hints {
	worker := s.member.RunningWorkerID() // not under s.mu: it takes the pool's lock
	s.mu.Lock()
	defer s.mu.Unlock()
	if worker == "" || worker != s.hintsWorker {
		return nil
	}
	return policy.HintOf(s.hints, name)
}

func (g *Gateway) insufficientScope(id json.RawMessage, access policy.Access, needed []string, kind, message string) *wire.Error {
	h := http.Header{}
	if g.opts.InsufficientScope != nil {
		g.opts.InsufficientScope(h, access.Granted(), needed, message)
	}
	return &wire.Error{Status: http.StatusForbidden, Code: codeForbidden, ID: id, Message: message, Header: h,
		Data: map[string]any{"kind": kind}}
}

const codeForbidden = -32003 // JSON-RPC error code of a request the policy refuses

func isToolError(result json.RawMessage) bool {
	// MayHaveKey, not a text search: encoding/json matches escaped and case-folded keys too.
	if !wire.MayHaveKey(result, "isError") {
		return false
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(result, &r) == nil && r.IsError
}

func acceptsSSE(r *http.Request) bool { return accepts(r.Header, mediaSSE) }

func bearer(r *http.Request) string {
	if tok, ok := auth.TokenFrom(r.Context()); ok {
		return tok // checked by the authenticator
	}
	if tok, err := auth.BearerToken(r); err == nil {
		return tok
	}
	return ""
}

// maxAuditTool is twice MCP's limit on tool names: real ones stay whole in an audit line.
const maxAuditTool = 256

func auditTool(name string) string { return textclip.String(name, maxAuditTool) }

func errorBody(he *wire.Error) []byte {
	if he.Code == 0 {
		return []byte(he.Message)
	}
	return jsonrpc.ErrorResponse(he.ID, he.Code, he.Message, he.Data).Encode()
}

func (g *Gateway) decide(p auth.Principal) policy.Access {
	return g.opts.Policy.DecideToken(policy.Token{Subject: p.Subject, User: p.User, Scopes: p.Scopes, Claims: p.Claims()})
}

// forbiddenChallenge is what the 403 for a forbidden tool asks for, and why: with the write
// scope too where needed (2026-07-28 asks for every scope at once).
func (g *Gateway) forbiddenChallenge(k policy.Kind, access policy.Access, tool string, hint *policy.Hints) (needed []string, why string) {
	for _, scope := range g.opts.Policy.ScopesSupported() { // any one of needed unlocks it
		if access.HasScope(scope) {
			continue
		}
		wider := g.opts.Policy.WithScope(access, scope)
		wider.ReadOnly = wider.ReadOnly || access.ReadOnly
		if v, _ := g.opts.Policy.ExplainKind(k, wider, tool, hint); v != policy.DeniedForbidden {
			needed = append(needed, scope)
		}
	}
	if len(needed) == 0 {
		return nil, ""
	}
	why = k.String() + " " + textclip.Quote(tool) + " needs scope " + strings.Join(needed, " or ")
	if access.ReadOnly {
		unlocked := g.opts.Policy.WithScope(access, needed[0])
		unlocked.ReadOnly = true
		if v, _ := g.opts.Policy.ExplainKind(k, unlocked, tool, hint); v == policy.DeniedReadOnly {
			write := g.opts.Policy.WriteScope()
			needed = append(needed, write)
			why += ", and scope " + write + " since it can change state"
		}
	}
	return needed, why
}
