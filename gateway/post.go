package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	textclip "github.com/gemgate/gemgate/internal/clip"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/internal/aside"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

const headerSessionID = "Mcp-Session-Id"

func (g *Gateway) handlePost(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	// Only the headers are kept past g.post, not the request: a subscriptions/listen stream
	// runs under this frame for hours, and the request's context holds the bearer token.
	h := r.Header
	method, err := g.post(rec, r)
	if err != nil {
		var he *httpError
		if !errors.As(err, &he) {
			he = &httpError{Status: http.StatusInternalServerError, Code: jsonrpc.CodeInternalError, Message: "internal error", Cause: err}
		}
		if he.Cause != nil || he.Status >= 500 {
			g.log.Warn("request failed", "status", he.Status, "error", he.Error(), "session", loggedSessionID(h))
		}
		if g.trace != nil { // the body is encoded for the trace only when there is one
			g.trace.outbound(loggedSessionID(h), errorBody(he))
		}
		he.write(rec)
	}
	g.metrics.request(method, rec.status(), time.Since(start))
}

// post handles one POST; it returns the method's metrics label ("other" until the body is
// read) with the error to answer, if any.
func (g *Gateway) post(w http.ResponseWriter, r *http.Request) (string, error) {
	if he := checkPostHeaders(r); he != nil {
		return "other", he
	}
	body, err := g.readBody(w, r)
	if err != nil {
		return "other", err
	}
	if g.trace != nil {
		g.trace.inbound(r, body)
	}
	msg, err := jsonrpc.Parse(body, jsonrpc.Options{Client: true, Owned: true}) // body is this request's alone, and never written again
	if err != nil {
		if errors.Is(err, jsonrpc.ErrInvalid) {
			return "other", &httpError{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}
		}
		return "other", &httpError{Status: http.StatusBadRequest, Code: jsonrpc.CodeParseError, Message: "parse error: the body is not one JSON-RPC message"}
	}
	return methodLabel(msg.Method), g.postMessage(w, r, msg)
}

// postMessage handles one parsed client message.
func (g *Gateway) postMessage(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message) error {
	if isModern(r, msg) {
		// A sessionless 2026-07-28 request: its own checks and route (modern.go).
		p, _ := auth.PrincipalFrom(r.Context())
		return g.modernPost(w, r, msg, p)
	}
	return g.postSessionMessage(w, r, msg)
}

// postSessionMessage handles a legacy (2025-x) message: initialize, or one of a session's.
// It is a function of its own so that its frame, which the session checks make large, is not
// under a 2026-07-28 listen stream for the hours it idles (TestIdleListenStackNeverDoubles).
func (g *Gateway) postSessionMessage(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message) error {
	sessionID := r.Header.Get(headerSessionID)
	// Every field the gateway decides on is read here, strictly, before anything else is done
	// with the message: an ambiguous one is refused before it can reach a worker.
	p, _ := auth.PrincipalFrom(r.Context())
	fields, he := readClientFields(msg)
	if he != nil {
		g.auditUnread(r, msg, p, "", he)
		return he
	}
	if he := checkKind(msg); he != nil {
		return he
	}

	if msg.IsRequest() && msg.Method == "initialize" {
		if fields.eraMeta {
			return eraMetaError(msg)
		}
		var err error
		aside.Run(func() { err = g.initialize(w, r, msg, p) }) // see aside.Run: the connection may go on to idle
		return err
	}
	if sessionID == "" {
		if msg.IsRequest() && msg.Method == "server/discover" {
			// The 2026-07-28 era's probe. A plain JSON-RPC error makes a dual-era client fall
			// back to initialize; no session is minted for it.
			return &httpError{Status: http.StatusOK, Code: jsonrpc.CodeMethodNotFound, ID: msg.ID,
				Message: "server/discover is not supported; use initialize"}
		}
		e := badRequest("missing Mcp-Session-Id header; send initialize first")
		e.ID = msg.ID
		return e
	}
	if fields.eraMeta {
		return eraMetaError(msg)
	}
	s := g.sessions.lookup(sessionID, ownerOf(p))
	if s == nil {
		e := sessionNotFound()
		e.ID = msg.ID
		return e
	}
	if err := checkProtocolVersion(r); err != nil {
		err.ID = msg.ID
		return err
	}
	if !s.isProbeAnswer(msg) && !s.touch(time.Now()) {
		e := sessionNotFound()
		e.ID = msg.ID
		return e
	}
	if he := g.grantRefusal(s, p, msg.ID, methodLabel(msg.Method)); he != nil {
		return he
	}
	switch {
	case msg.IsRequest():
		return g.forward(w, r, s, msg, fields, p)
	case msg.IsNotification():
		if he := g.narrowedRefusal(s, p, "a notification to the worker"); he != nil && !s.cancelsReadOnlyCall(msg, fields) {
			return he
		}
		g.notification(s, msg, fields)
	default:
		// An answer to the worker's request needs a token whose access covers the worker's
		// mode, whatever call it was asked with: a read-only token on a read-write session
		// answers nothing (the pool never asks a call of such a token), and the pool checks
		// the worker's own mode again (pool.ErrNotEntitled).
		if he := g.narrowedRefusal(s, p, "answering the worker's request"); he != nil {
			logNoPC(s.log.Handler(), slog.LevelInfo, "audit worker request", slog.String("answered_by", "client"),
				slog.Bool("read_only", true), slog.Bool("worker_read_only", false), slog.String("outcome", "refused"))
			return he
		}
		readOnly := g.opts.Policy.Decide(p.Scopes).ReadOnly
		if err := s.clientResponse(msg, readOnly); errors.Is(err, pool.ErrNotEntitled) {
			write := g.opts.Policy.WriteScope()
			return g.insufficientScope(nil, s.currentAccess().Narrow(g.opts.Policy.Decide(p.Scopes)), []string{write}, "readOnly",
				"the worker that asked is read-write and this token may only read: answering it needs a token with scope "+write)
		}
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// checkKind refuses a message whose method says it is of the other kind: a request (it has
// an id) named notifications/…, or a notification named anything else. The policy decides on
// requests, and notifications/cancelled is mapped to the session's own calls; passed on as
// the other kind, either would reach the worker unchecked, where a server may act on the
// method whatever the id (the go-sdk's transport cancels on any notifications/cancelled).
func checkKind(msg *jsonrpc.Message) *httpError {
	notificationName := strings.HasPrefix(msg.Method, "notifications/")
	switch {
	case msg.IsRequest() && notificationName:
		return &httpError{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest, ID: msg.ID,
			Message: "a request named " + quoteSafe(msg.Method) + ": notifications carry no id"}
	case msg.IsNotification() && !notificationName:
		return &httpError{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest,
			Message: "a notification named " + quoteSafe(msg.Method) + ": requests carry an id"}
	}
	return nil
}

// eraMetaError refuses a session's message, or an initialize, whose _meta names the
// 2026-07-28 protocol version: its worker (the go-sdk's server decides per request) would
// take it as a sessionless request, with its own requestState and input responses and none
// of gemgate's checks of that era, while gemgate reads it as the session's.
func eraMetaError(msg *jsonrpc.Message) *httpError {
	return &httpError{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest, ID: msg.ID,
		Message: "params._meta names " + metaProtocolVersion + ", which no message of a session carries: " +
			"a 2026-07-28 request goes without Mcp-Session-Id, with MCP-Protocol-Version: 2026-07-28"}
}

// readBody reads the whole body, up to MaxBodyBytes, into a buffer of its own, sized by the
// length the request declares (readDeclared): the message parsed from it keeps that buffer
// (jsonrpc.Parse, Owned). How long it may take is bounded by requestDeadline, which also
// closes the connection when the body is not read to its end.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := readDeclared(http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes), r.ContentLength, g.opts.MaxBodyBytes)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &httpError{Status: http.StatusRequestEntityTooLarge, Code: jsonrpc.CodeInvalidRequest,
				Message: "request body over the limit"}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, &httpError{Status: http.StatusRequestTimeout, Code: jsonrpc.CodeParseError,
				Message: "the request body did not arrive within the read timeout"}
		}
		return nil, &httpError{Status: http.StatusBadRequest, Code: jsonrpc.CodeParseError, Message: "could not read the request body", Cause: err}
	}
	return body, nil
}

// notification passes a client notification to the worker; notifications/cancelled is
// mapped to the worker's id of the call it names.
func (g *Gateway) notification(s *session, msg *jsonrpc.Message, f clientFields) {
	if msg.Method == "notifications/cancelled" {
		if f.cancelID != nil {
			if !s.cancelCall(f.cancelID, f.cancelReason) {
				s.log.Debug("client cancelled a request that is not in flight")
			}
		}
		return
	}
	if err := s.member.Notify(msg); err != nil {
		s.log.Warn("could not pass a notification to the worker", "method", msg.Method, "error", err)
	}
}

// forward passes a request to the session's worker and answers it: application/json, or an
// SSE stream when the worker sends messages related to the request before its answer.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, s *session, msg *jsonrpc.Message, f clientFields, p auth.Principal) error {
	decided := g.opts.Policy.Decide(p.Scopes)
	g.stepUp(r, s, p, decided)
	access := s.currentAccess().Narrow(decided)
	if missing := access.Missing(); len(missing) > 0 {
		// The authenticator refuses such tokens first; this holds when it is not the one in front.
		return g.insufficientScope(msg.ID, access, missing, "forbidden", "missing required scopes")
	}
	tool := f.tool
	if msg.Method == "tools/call" {
		name := f.tool
		if verdict := g.opts.Policy.CheckTool(access, name, s.hint(name)); verdict != policy.Allowed {
			if exists, known := g.toolExists(r.Context(), s, name); known && !exists {
				g.metrics.toolCall("unknown")
				g.audit(s, tool, access.ReadOnly, "unknown", 0)
				return &httpError{Status: http.StatusOK, Code: jsonrpc.CodeInvalidParams, ID: msg.ID,
					Message: "unknown tool " + quoteSafe(name)}
			}
			g.metrics.toolCall(verdict.String())
			g.audit(s, tool, access.ReadOnly, verdict.String(), 0)
			if verdict == policy.DeniedReadOnly {
				write := g.opts.Policy.WriteScope()
				return g.insufficientScope(msg.ID, access, []string{write}, "readOnly",
					"tool "+quoteSafe(name)+" can change state and this session is read-only; only a session opened with scope "+write+" may call it")
			}
			needed, why := g.forbiddenChallenge(access, name, s.hint(name))
			return g.insufficientScope(msg.ID, access, needed, "forbidden", why)
		}
	}
	inf, err := s.startCall(msg.ID, acceptsSSE(r), access.ReadOnly, g.opts.Lifetime.MaxCallsPerSession)
	if errors.Is(err, errEnding) {
		e := sessionNotFound()
		e.ID = msg.ID
		return e
	}
	if errors.Is(err, errTooManyCalls) {
		h := http.Header{}
		h.Set("Retry-After", "1")
		return &httpError{Status: http.StatusTooManyRequests, Code: jsonrpc.CodeInternalError, ID: msg.ID, Header: h,
			Message: fmt.Sprintf("too many calls in flight on this session (limit %d); wait for one to finish", g.opts.Lifetime.MaxCallsPerSession)}
	}
	if err != nil {
		return &httpError{Status: http.StatusOK, Code: jsonrpc.CodeInvalidRequest, ID: msg.ID, Message: err.Error()}
	}
	defer s.endCall(inf)
	call, err := s.member.Call(r.Context(), pool.Request{Message: msg, ProgressToken: f.progressToken, Identity: g.identity(r, p, access, s), Tag: inf})
	if err != nil {
		return callError(msg.ID, err)
	}
	s.setCall(inf, call)
	started := time.Now()
	outcome := g.await(&pending{w: w, r: r, s: s, inf: inf, method: msg.Method, access: access})
	if tool != "" {
		g.metrics.toolCall(outcome)
		g.audit(s, tool, access.ReadOnly, outcome, time.Since(started))
	}
	return nil
}

// pending is one forwarded request waiting for its answer.
type pending struct {
	w      http.ResponseWriter
	r      *http.Request
	s      *session
	inf    *inflight
	method string
	access policy.Access
}

// await waits for the worker's answer and writes it. It returns the call's outcome for the
// audit line: ok, error, cancelled, disconnected or timeout. The request's id is freed before
// the answer is written, since a client may reuse the id the moment it has the answer.
func (g *Gateway) await(c *pending) string {
	w, r, s, inf, method, access := c.w, c.r, c.s, c.inf, c.method, c.access
	answerAsStream := g.opts.PostAnswers != PostAnswersJSON && inf.canStream // acceptsSSE, as the call was started
	ps := &postStream{w: w, store: s.outbox.resume}
	writeEvent := func(ev []byte, last bool) bool {
		g.trace.outbound(s.id, ev)
		return ps.event(ev, last)
	}
	// writeAnswer ends the request with its answer: the last event of the stream, or JSON.
	writeAnswer := func(m *jsonrpc.Message, asEvent bool) {
		if asEvent {
			pe := placeEvent(m) // encoded once, in its frame, for the trace and the client
			g.trace.outbound(s.id, pe.data())
			ps.placed(pe, true)
			return
		}
		body := m.Encode() // one encoding for the trace and the client
		g.trace.outbound(s.id, body)
		writeBody(w, http.StatusOK, body)
	}
	var timeout <-chan time.Time
	if d := g.opts.Lifetime.RequestTimeout; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	clientGone := r.Context().Done()
	var orphanTicker *time.Ticker // runs once the stream's connection is lost
	var orphanCheck <-chan time.Time
	var lost time.Time
	defer func() {
		if orphanTicker != nil {
			orphanTicker.Stop()
		}
	}()
	// orphan decides what a lost connection means: a stream the client can resume keeps the
	// call running (disconnection is not cancellation); any other ends it.
	orphan := func(reason string) bool {
		if !ps.resumable() {
			inf.call.Cancel(reason)
			ps.finish() // a first write cut midway may have given the client an id to resume from
			return false
		}
		ps.lose()
		if orphanTicker == nil {
			lost = time.Now()
			orphanTicker = time.NewTicker(resumeRetention / 4)
			orphanCheck = orphanTicker.C
		}
		clientGone = nil
		return true
	}
	for {
		select {
		case resp := <-inf.call.Result():
			// Whatever the worker sent before its answer is already queued: keep the order.
			for _, ev := range inf.events.take() {
				writeEvent(ev, false)
			}
			resp = g.filter(s, method, access, resp)
			outcome := "ok"
			if resp.Error != nil {
				outcome = "error"
			} else if method == "tools/call" && isToolError(resp.Result) {
				outcome = "tool_error"
			}
			s.endCall(inf)
			writeAnswer(resp, ps.started() || answerAsStream)
			return outcome
		case <-inf.events.ready:
			for _, ev := range inf.events.take() {
				if !writeEvent(ev, false) && !orphan("client stream lost") {
					return "disconnected"
				}
			}
		case <-inf.cancelled:
			if !ps.started() {
				w.WriteHeader(http.StatusAccepted)
			}
			ps.finish()
			return "cancelled"
		case <-clientGone:
			if !orphan("client disconnected") {
				return "disconnected"
			}
		case <-orphanCheck:
			if ps.abandoned(lost) {
				inf.call.Cancel("client stream lost and not resumed")
				ps.finish()
				return "disconnected"
			}
		case <-timeout:
			inf.call.Cancel("request timeout")
			go s.member.CheckResponsive(s.done)
			resp := jsonrpc.ErrorResponse(inf.clientID, jsonrpc.CodeRequestTimeout, "request timed out", map[string]any{"kind": "timeout"})
			writeAnswer(resp, ps.started())
			return "timeout"
		}
	}
}

// filter applies the policy to a tools/list answer: tools the access may not call are
// dropped. A malformed list fails closed.
func (g *Gateway) filter(s *session, method string, access policy.Access, resp *jsonrpc.Message) *jsonrpc.Message {
	if method != "tools/list" || resp.Result == nil {
		return resp
	}
	filtered, hints, err := g.opts.Policy.FilterToolsList(access, resp.Result)
	if err != nil {
		s.log.Warn("worker's tools/list answer is malformed; refused", "error", err)
		return jsonrpc.ErrorResponse(resp.ID, jsonrpc.CodeInternalError, "the worker's tool list is malformed", nil)
	}
	s.mu.Lock()
	if s.hints == nil && len(hints) > 0 {
		s.hints = make(map[string]bool, len(hints))
	}
	for name, h := range hints {
		s.hints[name] = h
	}
	s.mu.Unlock()
	// A read-only user of a worker nobody vouched for sees an empty list and no reason; say
	// once per worker (not per session, nor per list) what was hidden and what would show it.
	if access.ReadOnly {
		var all struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		hidden, visible := 0, 0
		if json.Unmarshal(resp.Result, &all) == nil {
			for _, tool := range all.Tools {
				var hint *bool
				if h, ok := hints[tool.Name]; ok {
					hint = &h
				}
				switch g.opts.Policy.CheckTool(access, tool.Name, hint) {
				case policy.DeniedReadOnly:
					hidden++
				case policy.Allowed:
					visible++
				}
			}
		}
		if hidden > 0 && s.member.FirstTime("read-only tools hidden") {
			s.log.Info(fmt.Sprintf("read-only sessions see %d of %d tools of this worker; list the safe ones in read_only_tools or set trust_read_only_hints",
				visible, len(all.Tools)), "hidden", hidden, "tools", len(all.Tools))
		}
	}
	out := *resp
	out.Result = filtered
	return &out
}

// hint is the readOnlyHint the worker gave for a tool in its last tools/list, if any.
func (s *session) hint(name string) *bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.hints[name]; ok {
		return &h
	}
	return nil
}

func (g *Gateway) insufficientScope(id json.RawMessage, access policy.Access, needed []string, kind, message string) *httpError {
	h := http.Header{}
	if g.opts.InsufficientScope != nil {
		g.opts.InsufficientScope(h, access.Granted(), needed, message)
	}
	return &httpError{Status: http.StatusForbidden, Code: codeForbidden, ID: id, Message: message, Header: h,
		Data: map[string]any{"kind": kind}}
}

// unlockingScopes are the scopes any one of which would let access use the tool, so that a
// forbidden call's challenge tells the client what to ask for. The session's read-only state
// is kept: a scope that would only lift it is not one of them.
func (g *Gateway) unlockingScopes(access policy.Access, tool string, hint *bool) []string {
	var out []string
	granted := access.Granted()
	for _, scope := range g.opts.Policy.ScopesSupported() {
		if access.HasScope(scope) {
			continue
		}
		wider := g.opts.Policy.Decide(append(slices.Clip(granted), scope))
		wider.ReadOnly = wider.ReadOnly || access.ReadOnly
		if g.opts.Policy.CheckTool(wider, tool, hint) != policy.DeniedForbidden {
			out = append(out, scope)
		}
	}
	return out
}

// codeForbidden is the JSON-RPC error code of a request the policy refuses.
const codeForbidden = -32003

// audit writes a call's audit line to the session's log.
func (g *Gateway) audit(s *session, tool string, readOnly bool, outcome string, d time.Duration) {
	logNoPC(s.log.Handler(), slog.LevelInfo, "audit tools/call",
		slog.String("tool", auditTool(tool)), slog.Bool("read_only", readOnly),
		slog.String("outcome", outcome), slog.Duration("duration", d))
}

// logNoPC writes a record to h as Logger.LogAttrs would, without the caller's program
// counter: LogAttrs walks the stack for it (runtime.Callers) on every line, no gemgate log
// prints it (no handler has AddSource), and it cost a third as much as formatting an audit
// line.
func logNoPC(h slog.Handler, level slog.Level, msg string, attrs ...slog.Attr) {
	ctx := context.Background()
	if !h.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(time.Now(), level, msg, 0)
	r.AddAttrs(attrs...)
	_ = h.Handle(ctx, r)
}

func isToolError(result json.RawMessage) bool {
	// Most results say nothing of isError; a 1 MiB answer need not be decoded to learn that.
	// Not a search for the exact text: a key spelled in escapes or in another case is the
	// same member to encoding/json, which the decision below and the Go clients read with.
	if !mayHaveKey(result, "isError") {
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
		return tok // the authenticator read and checked this request's header already
	}
	tok, err := auth.BearerToken(r)
	if err != nil {
		return ""
	}
	return tok
}

// maxAuditTool bounds the tool name an audit line records: the name is the client's, as long
// as its body allows, and MCP asks tool names to be at most 128 characters, so twice that
// keeps any real name whole and a made-up one from filling the log.
const maxAuditTool = 256

// auditTool is the tool name as an audit line records it (internal/clip's rule).
func auditTool(name string) string { return textclip.String(name, maxAuditTool) }

// quoteSafe shortens a client-supplied string before it goes into a message.
func quoteSafe(s string) string {
	b, _ := json.Marshal(textclip.String(s, 100))
	return string(b)
}

func errorBody(he *httpError) []byte {
	if he.Code == 0 {
		return []byte(he.Message)
	}
	return jsonrpc.ErrorResponse(he.ID, he.Code, he.Message, he.Data).Encode()
}

// statusRecorder remembers the status a handler wrote; it keeps Unwrap so that
// http.ResponseController still reaches the connection.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}
