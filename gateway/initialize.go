package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/worker"
)

// supportedVersions are the protocol revisions the gateway speaks; the first is its latest.
var supportedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

func checkProtocolVersion(r *http.Request) *httpError {
	v := r.Header.Get("Mcp-Protocol-Version")
	if v == "" || slices.Contains(supportedVersions, v) {
		return nil // absent means 2025-03-26 rules
	}
	return &httpError{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest,
		Message: "unsupported MCP-Protocol-Version " + quoteSafe(v), Data: map[string]any{"supported": supportedVersions}}
}

// How long a refused initialize is told to wait.
const (
	shutdownRetryAfter     = 5 * time.Second
	sessionLimitRetryAfter = 10 * time.Second // sessions end by themselves at their idle timeout
	workerRetryAfter       = 5 * time.Second
)

// initialize opens a session: a worker is started for the caller and answers the client's
// initialize; the session id is minted only on a successful InitializeResult.
func (g *Gateway) initialize(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, p auth.Principal) error {
	if g.closing.Load() {
		return overloaded(msg.ID, "the gateway is shutting down", shutdownRetryAfter, nil)
	}
	access := g.opts.Policy.Decide(p.Scopes)
	if missing := access.Missing(); len(missing) > 0 {
		return g.insufficientScope(msg.ID, access, missing, "forbidden", "missing required scopes")
	}
	o := ownerOf(p)
	if err := g.sessions.reserve(o); err != nil {
		g.metrics.sessionOpened("limit")
		if errors.Is(err, errUserFull) {
			return tooManyRequests(msg.ID, err.Error(), sessionLimitRetryAfter)
		}
		return overloaded(msg.ID, err.Error(), sessionLimitRetryAfter, nil)
	}
	committed := false
	defer func() {
		if !committed {
			g.sessions.release(o)
		}
	}()
	params, err := negotiate(msg.Params)
	if err != nil {
		return &httpError{Status: http.StatusOK, Code: jsonrpc.CodeInvalidParams, ID: msg.ID, Message: err.Error()}
	}
	// The rate is spent only by a well-formed initialize within the caps: it is the start of a
	// worker that it meters.
	if ok, wait := g.starts.take(o, time.Now()); !ok {
		g.metrics.sessionOpened("rate")
		return tooManyRequests(msg.ID, "you are opening sessions too fast; wait before the next", wait)
	}
	s := &Session{
		id: newSessionID(), owner: o, user: p.User, access: access, opened: time.Now(),
		calls: map[string]*inflight{}, progress: map[string]*inflight{}, toWorker: map[string]json.RawMessage{},
		probes: map[string]*probe{}, hints: map[string]bool{}, done: make(chan struct{}),
	}
	s.lastActive = s.opened
	s.initParams = params
	s.log = g.log.With("session", s.id, "user", p.User)
	s.outbox = newOutbox(g.metrics.outboxDropped, g.metrics.streamMessageMoved)

	started := time.Now()
	launch, err := g.opts.Workers.Launch(r.Context(), Identity{Principal: p, ReadOnly: access.ReadOnly, Session: s.id, Token: bearer(r)})
	if err != nil {
		g.metrics.sessionOpened("worker_error")
		return overloaded(msg.ID, "could not prepare a worker for this session", workerRetryAfter, err)
	}
	s.credExpiry = launch.CredentialExpiry
	proc, err := worker.Start(g.workerSpec(s, launch.Spec))
	if err != nil {
		g.metrics.sessionOpened("worker_error")
		return overloaded(msg.ID, "could not start a worker for this session", workerRetryAfter, err)
	}
	s.proc = proc
	g.metrics.workerStarted()
	fail := func(result string) {
		g.metrics.sessionOpened(result)
		exited := proc.Err() // nil unless the worker ended on its own before the gateway stopped it
		proc.Stop()
		g.metrics.workerExited(exited)
	}

	call, err := proc.Send(&jsonrpc.Message{ID: msg.ID, Method: "initialize", Params: params})
	if err != nil {
		fail("worker_error")
		return overloaded(msg.ID, "the worker failed at start", workerRetryAfter, err)
	}
	var resp *jsonrpc.Message
	select {
	case resp = <-call.Result():
	case <-time.After(g.opts.InitTimeout):
		fail("worker_timeout")
		return overloaded(msg.ID, "the worker did not answer initialize in time", workerRetryAfter, nil)
	case <-r.Context().Done():
		fail("client_gone")
		return nil
	}
	if resp.Error != nil && exitedUnasked(resp) {
		fail("worker_error")
		return overloaded(msg.ID, "the worker exited at start", workerRetryAfter, errors.New(string(resp.Error)))
	}
	if resp.Error != nil {
		// The worker's own refusal (a backend login refused, say) is for the client to read.
		fail("worker_error")
		s.log.Warn("worker refused initialize", "error", string(resp.Error))
		body := resp.Encode() // one encoding for the trace and the client
		g.trace.outbound("", body)
		writeBody(w, http.StatusOK, body)
		return nil
	}
	version, err := resultVersion(resp.Result)
	if err != nil {
		fail("worker_error")
		return &httpError{Status: http.StatusOK, Code: jsonrpc.CodeInternalError, ID: msg.ID, Message: "the worker's initialize answer is unusable", Cause: err}
	}
	s.version = version
	// Idleness counts from the moment the session opens, not from when its worker started:
	// a slow login is not the client's quiet.
	s.mu.Lock()
	s.lastActive = time.Now()
	s.mu.Unlock()
	if !g.admit(s) {
		fail("shutdown")
		return overloaded(msg.ID, "the gateway is shutting down", shutdownRetryAfter, nil)
	}
	committed = true
	g.metrics.sessionOpened("ok")
	g.metrics.workerStart(time.Since(started))
	go g.watch(s)
	s.log.Info("session opened", "read_only", access.ReadOnly, "protocol_version", version, "pid", proc.Pid())

	w.Header().Set(headerSessionID, s.id)
	body := resp.Encode() // one encoding for the trace and the client
	g.trace.outbound(s.id, body)
	writeBody(w, http.StatusOK, body)
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

// exitedUnasked reports whether an error answer to initialize is the worker package's note
// that the worker exited before answering, rather than an answer the worker gave.
func exitedUnasked(resp *jsonrpc.Message) bool {
	var e struct {
		Data struct {
			Kind string `json:"kind"`
		} `json:"data"`
	}
	return json.Unmarshal(resp.Error, &e) == nil && e.Data.Kind == "workerExit"
}
