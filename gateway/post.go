package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/worker"
)

const headerSessionID = "Mcp-Session-Id"

func (g *Gateway) handlePost(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	method, code := "other", 0
	rec := &statusRecorder{ResponseWriter: w}
	if err := g.post(rec, r, &method); err != nil {
		var he *httpError
		if !errors.As(err, &he) {
			he = &httpError{Status: http.StatusInternalServerError, Code: worker.CodeInternalError, Message: "internal error", Cause: err}
		}
		if he.Cause != nil || he.Status >= 500 {
			g.log.Warn("request failed", "status", he.Status, "error", he.Error(), "session", r.Header.Get(headerSessionID))
		}
		g.trace.outbound(r.Header.Get(headerSessionID), errorBody(he))
		he.write(rec)
	}
	code = rec.status()
	g.metrics.request(method, code, time.Since(start))
}

func (g *Gateway) post(w http.ResponseWriter, r *http.Request, method *string) error {
	body, err := g.readBody(w, r)
	sessionID := r.Header.Get(headerSessionID)
	if err != nil {
		return err
	}
	g.trace.inbound(sessionID, body)
	msg, err := worker.Parse(body)
	if err != nil {
		if errors.Is(err, worker.ErrInvalid) {
			return &httpError{Status: http.StatusBadRequest, Code: worker.CodeInvalidRequest, Message: err.Error()}
		}
		return &httpError{Status: http.StatusBadRequest, Code: worker.CodeParseError, Message: "parse error: the body is not one JSON-RPC message"}
	}
	*method = methodLabel(msg.Method)
	p, _ := auth.PrincipalFrom(r.Context())

	if msg.IsRequest() && msg.Method == "initialize" {
		return g.initialize(w, r, msg, p)
	}
	if sessionID == "" {
		if msg.IsRequest() && msg.Method == "server/discover" {
			// The 2026-07-28 era's probe. A plain JSON-RPC error makes a dual-era client fall
			// back to initialize; no session is minted for it.
			return &httpError{Status: http.StatusOK, Code: worker.CodeMethodNotFound, ID: msg.ID,
				Message: "server/discover is not supported; use initialize"}
		}
		e := badRequest("missing Mcp-Session-Id header; send initialize first")
		e.ID = msg.ID
		return e
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
	s.touch(time.Now())
	switch {
	case msg.IsRequest():
		return g.forward(w, r, s, msg, p)
	case msg.IsNotification():
		g.notification(s, msg)
	default:
		s.clientResponse(msg)
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer rc.SetReadDeadline(time.Time{})
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &httpError{Status: http.StatusRequestEntityTooLarge, Code: worker.CodeInvalidRequest,
				Message: "request body over the limit"}
		}
		return nil, &httpError{Status: http.StatusBadRequest, Code: worker.CodeParseError, Message: "could not read the request body", Cause: err}
	}
	return body, nil
}

// supportedVersions are the protocol revisions the gateway speaks; the first is its latest.
var supportedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

func checkProtocolVersion(r *http.Request) *httpError {
	v := r.Header.Get("Mcp-Protocol-Version")
	if v == "" || slices.Contains(supportedVersions, v) {
		return nil // absent means 2025-03-26 rules
	}
	return &httpError{Status: http.StatusBadRequest, Code: worker.CodeInvalidRequest,
		Message: "unsupported MCP-Protocol-Version " + quoteSafe(v), Data: map[string]any{"supported": supportedVersions}}
}

// initialize opens a session: a worker is started for the caller and answers the client's
// initialize; the session id is minted only on a successful InitializeResult.
func (g *Gateway) initialize(w http.ResponseWriter, r *http.Request, msg *worker.Message, p auth.Principal) error {
	if g.closing.Load() {
		return overloaded("the gateway is shutting down", 5)
	}
	access := g.opts.Policy.Decide(p.Scopes)
	if missing := access.Missing(); len(missing) > 0 {
		return g.insufficientScope(msg.ID, access, missing, "forbidden", "missing required scopes")
	}
	o := ownerOf(p)
	if ok, why := g.sessions.reserve(o); !ok {
		g.metrics.sessionOpened("limit")
		return overloaded(why, 10)
	}
	committed := false
	defer func() {
		if !committed {
			g.sessions.release(o)
		}
	}()
	params, err := negotiate(msg.Params)
	if err != nil {
		return &httpError{Status: http.StatusOK, Code: worker.CodeInvalidParams, ID: msg.ID, Message: err.Error()}
	}
	s := &Session{
		id: newSessionID(), owner: o, user: p.User, access: access, opened: time.Now(),
		calls: map[string]*inflight{}, progress: map[string]*inflight{}, toWorker: map[string]json.RawMessage{},
		probes: map[string]*probe{}, hints: map[string]bool{}, done: make(chan struct{}),
	}
	s.lastActive = s.opened
	s.log = g.log.With("session", s.id, "user", p.User)
	s.outbox = newOutbox(g.metrics.outboxDropped)

	started := time.Now()
	spec, err := g.opts.Workers.Spec(r.Context(), Identity{Principal: p, ReadOnly: access.ReadOnly, Session: s.id, Token: bearer(r)})
	if err != nil {
		g.metrics.sessionOpened("worker_error")
		return &httpError{Status: http.StatusOK, Code: worker.CodeInternalError, ID: msg.ID, Message: "could not prepare a worker for this session", Cause: err}
	}
	spec.OnMessage = s.onWorkerMessage
	spec.Logger = s.log
	if g.trace != nil {
		spec.OnTrace = func(dir string, line []byte) { g.trace.line(dir, s.id, line) }
	}
	proc, err := worker.Start(spec)
	if err != nil {
		g.metrics.sessionOpened("worker_error")
		return &httpError{Status: http.StatusOK, Code: worker.CodeInternalError, ID: msg.ID, Message: "could not start a worker for this session", Cause: err}
	}
	s.proc = proc
	g.metrics.workerStarted()
	fail := func(result string) {
		g.metrics.sessionOpened(result)
		proc.Stop()
		g.metrics.workerExited(proc.Err())
	}

	call, err := proc.Send(&worker.Message{ID: msg.ID, Method: "initialize", Params: params})
	if err != nil {
		fail("worker_error")
		return &httpError{Status: http.StatusOK, Code: worker.CodeInternalError, ID: msg.ID, Message: "the worker failed at start", Cause: err}
	}
	var resp *worker.Message
	select {
	case resp = <-call.Result():
	case <-time.After(g.opts.InitTimeout):
		fail("worker_timeout")
		return &httpError{Status: http.StatusOK, Code: worker.CodeInternalError, ID: msg.ID, Message: "the worker did not answer initialize in time"}
	case <-r.Context().Done():
		fail("client_gone")
		return nil
	}
	if resp.Error != nil {
		fail("worker_error")
		s.log.Warn("worker refused initialize", "error", string(resp.Error))
		g.trace.outbound("", resp.Encode())
		writeMessage(w, http.StatusOK, resp)
		return nil
	}
	version, err := resultVersion(resp.Result)
	if err != nil {
		fail("worker_error")
		return &httpError{Status: http.StatusOK, Code: worker.CodeInternalError, ID: msg.ID, Message: "the worker's initialize answer is unusable", Cause: err}
	}
	s.version = version
	g.sessions.commit(s)
	committed = true
	g.metrics.sessionOpened("ok")
	g.metrics.workerStart(time.Since(started))
	g.wg.Add(1)
	go g.watch(s)
	s.log.Info("session opened", "read_only", access.ReadOnly, "protocol_version", version, "pid", proc.Pid())

	w.Header().Set(headerSessionID, s.id)
	g.trace.outbound(s.id, resp.Encode())
	writeMessage(w, http.StatusOK, resp)
	return nil
}

// negotiate passes the client's protocol version on to the worker if the gateway speaks it,
// and otherwise asks the worker for the gateway's latest, as a server would answer.
func negotiate(params json.RawMessage) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if len(params) == 0 || json.Unmarshal(params, &fields) != nil || fields == nil {
		return nil, errors.New("initialize needs params with a protocolVersion")
	}
	var v string
	_ = json.Unmarshal(fields["protocolVersion"], &v)
	if slices.Contains(supportedVersions, v) {
		return params, nil
	}
	fields["protocolVersion"], _ = json.Marshal(supportedVersions[0])
	return json.Marshal(fields)
}

func resultVersion(result json.RawMessage) (string, error) {
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(result, &res); err != nil {
		return "", err
	}
	if !slices.Contains(supportedVersions, res.ProtocolVersion) {
		return "", errors.New("the worker chose protocol version " + quoteSafe(res.ProtocolVersion) + ", which the gateway does not speak")
	}
	return res.ProtocolVersion, nil
}

// notification passes a client notification to the worker; notifications/cancelled is
// mapped to the worker's id of the call it names.
func (g *Gateway) notification(s *Session, msg *worker.Message) {
	if msg.Method == "notifications/cancelled" {
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		if json.Unmarshal(msg.Params, &p) == nil && p.RequestID != nil {
			if !s.cancelCall(p.RequestID, p.Reason) {
				s.log.Debug("client cancelled a request that is not in flight")
			}
		}
		return
	}
	if err := s.proc.Notify(msg); err != nil {
		s.log.Warn("could not pass a notification to the worker", "method", msg.Method, "error", err)
	}
}

// forward passes a request to the session's worker and answers it: application/json, or an
// SSE stream when the worker sends messages related to the request before its answer.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, s *Session, msg *worker.Message, p auth.Principal) error {
	access := s.access.Narrow(g.opts.Policy.Decide(p.Scopes))
	tool := ""
	if msg.Method == "tools/call" {
		name, err := toolName(msg.Params)
		if err != nil {
			return &httpError{Status: http.StatusOK, Code: worker.CodeInvalidParams, ID: msg.ID, Message: err.Error()}
		}
		tool = name
		if verdict := g.opts.Policy.CheckTool(access, name, s.hint(name)); verdict != policy.Allowed {
			g.metrics.toolCall(verdict.String())
			g.audit(s, tool, access.ReadOnly, verdict.String(), 0)
			if verdict == policy.DeniedReadOnly {
				return g.insufficientScope(msg.ID, access, []string{g.opts.Policy.WriteScope()}, "readOnly",
					"tool "+quoteSafe(name)+" changes state; this session is read-only")
			}
			return g.insufficientScope(msg.ID, access, nil, "forbidden", "tool "+quoteSafe(name)+" is not allowed for this token")
		}
	}
	inf, ok := s.startCall(msg.ID, msg.Params, acceptsSSE(r))
	if !ok {
		return &httpError{Status: http.StatusOK, Code: worker.CodeInvalidRequest, ID: msg.ID, Message: "a request with this id is already in flight"}
	}
	defer s.endCall(inf, msg.Params)
	call, err := s.proc.Send(msg)
	if err != nil {
		return &httpError{Status: http.StatusOK, Code: worker.CodeInternalError, ID: msg.ID, Message: "the session's worker is gone", Cause: err}
	}
	inf.call = call
	started := time.Now()
	outcome := g.await(w, r, s, inf, msg.Method, access)
	if tool != "" {
		g.metrics.toolCall(outcome)
		g.audit(s, tool, access.ReadOnly, outcome, time.Since(started))
	}
	return nil
}

// await waits for the worker's answer and writes it. It returns the call's outcome for the
// audit line: ok, error, cancelled, disconnected or timeout.
func (g *Gateway) await(w http.ResponseWriter, r *http.Request, s *Session, inf *inflight, method string, access policy.Access) string {
	var stream *sse
	writeEvent := func(ev []byte) bool {
		if stream == nil {
			stream = newSSE(w)
			if stream.start(nil) != nil {
				return false
			}
		}
		g.trace.outbound(s.id, ev)
		return stream.event(ev) == nil
	}
	var timeout <-chan time.Time
	if d := g.opts.Lifetime.RequestTimeout; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case resp := <-inf.call.Result():
			// Whatever the worker sent before its answer is already queued: keep the order.
			for drained := false; !drained; {
				select {
				case ev := <-inf.events:
					writeEvent(ev)
				default:
					drained = true
				}
			}
			resp = g.filter(s, method, access, resp)
			outcome := "ok"
			if resp.Error != nil {
				outcome = "error"
			} else if method == "tools/call" && isToolError(resp.Result) {
				outcome = "tool_error"
			}
			if stream != nil {
				writeEvent(resp.Encode())
			} else {
				g.trace.outbound(s.id, resp.Encode())
				writeMessage(w, http.StatusOK, resp)
			}
			return outcome
		case ev := <-inf.events:
			if !writeEvent(ev) {
				inf.call.Cancel("client stream lost")
				return "disconnected"
			}
		case <-inf.cancelled:
			if stream == nil {
				w.WriteHeader(http.StatusAccepted)
			}
			return "cancelled"
		case <-r.Context().Done():
			if g.opts.KeepCallsOnDisconnect {
				inf.call.Abandon()
			} else {
				inf.call.Cancel("client disconnected")
			}
			return "disconnected"
		case <-timeout:
			inf.call.Cancel("request timeout")
			go g.reaper.checkResponsive(s)
			resp := worker.ErrorResponse(inf.clientID, worker.CodeRequestTimeout, "request timed out", map[string]any{"kind": "timeout"})
			if stream != nil {
				writeEvent(resp.Encode())
			} else {
				g.trace.outbound(s.id, resp.Encode())
				writeMessage(w, http.StatusOK, resp)
			}
			return "timeout"
		}
	}
}

// filter applies the policy to a tools/list answer: tools the access may not call are
// dropped. A malformed list fails closed.
func (g *Gateway) filter(s *Session, method string, access policy.Access, resp *worker.Message) *worker.Message {
	if method != "tools/list" || resp.Result == nil {
		return resp
	}
	filtered, hints, err := g.opts.Policy.FilterToolsList(access, resp.Result)
	if err != nil {
		s.log.Warn("worker's tools/list answer is malformed; refused", "error", err)
		return worker.ErrorResponse(resp.ID, worker.CodeInternalError, "the worker's tool list is malformed", nil)
	}
	s.mu.Lock()
	for name, h := range hints {
		s.hints[name] = h
	}
	s.mu.Unlock()
	out := *resp
	out.Result = filtered
	return &out
}

// hint is the readOnlyHint the worker gave for a tool in its last tools/list, if any.
func (s *Session) hint(name string) *bool {
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

// codeForbidden is the JSON-RPC error code of a request the policy refuses.
const codeForbidden = -32003

func (g *Gateway) audit(s *Session, tool string, readOnly bool, outcome string, d time.Duration) {
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "audit tools/call",
		slog.String("tool", tool), slog.Bool("read_only", readOnly),
		slog.String("outcome", outcome), slog.Duration("duration", d))
}

func toolName(params json.RawMessage) (string, error) {
	var p struct {
		Name *string `json:"name"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil || p.Name == nil || *p.Name == "" {
		return "", errors.New("tools/call needs params.name")
	}
	return *p.Name, nil
}

func isToolError(result json.RawMessage) bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(result, &r) == nil && r.IsError
}

func acceptsSSE(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return accept == "" || strings.Contains(accept, "text/event-stream") || strings.Contains(accept, "*/*")
}

func bearer(r *http.Request) string {
	tok, err := auth.BearerToken(r)
	if err != nil {
		return ""
	}
	return tok
}

// quoteSafe shortens a client-supplied string before it goes into a message.
func quoteSafe(s string) string {
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func errorBody(he *httpError) []byte {
	if he.Code == 0 {
		return []byte(he.Message)
	}
	return worker.ErrorResponse(he.ID, he.Code, he.Message, he.Data).Encode()
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
