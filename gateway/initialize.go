package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/limit"
	"github.com/gemgate/gemgate/gateway/sessions"
	"github.com/gemgate/gemgate/gateway/wire"
	textclip "github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// supportedVersions are the protocol revisions the gateway speaks, latest first.
var supportedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// primingVersion is the first revision whose clients expect a stream's priming event (revision
// names are dates: a later one sorts after).
const primingVersion = "2025-11-25"

func checkProtocolVersion(r *http.Request) *wire.Error {
	v := r.Header.Get("Mcp-Protocol-Version")
	if v == "" || slices.Contains(supportedVersions, v) {
		return nil // absent means 2025-03-26 rules
	}
	return &wire.Error{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest,
		Message: "unsupported MCP-Protocol-Version " + textclip.Quote(v),
		Data:    map[string]any{"supported": supportedVersions}}
}

const (
	shutdownRetryAfter     = 5 * time.Second
	sessionLimitRetryAfter = 10 * time.Second // sessions end at their idle timeout
	workerRetryAfter       = 5 * time.Second
)

// initialize opens a session on the caller's worker; the id is minted only on success.
func (g *Gateway) initialize(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, p auth.Principal) error {
	if g.closing.Load() {
		return drainRefused(msg.ID)
	}
	access := g.decide(p) // postMessage checked its required scopes
	o := ownerOf(p)
	if err := g.sessions.Reserve(o); err != nil {
		g.metrics.SessionOpened("limit")
		if errors.Is(err, sessions.ErrUserFull) {
			return wire.TooManyRequests(msg.ID, err.Error(), sessionLimitRetryAfter)
		}
		return wire.Overloaded(msg.ID, err.Error(), sessionLimitRetryAfter, nil)
	}
	committed := false
	defer func() {
		if !committed {
			g.sessions.Release(o)
		}
	}()
	params, err := negotiate(msg)
	if err != nil {
		return &wire.Error{Status: http.StatusOK, Code: jsonrpc.CodeInvalidParams, ID: msg.ID, Message: err.Error()}
	}
	s := &session{
		id: newSessionID(), owner: o, access: access, opened: time.Now(),
		done: make(chan struct{}),
	}
	s.lastActive = s.opened
	s.logh, s.log = sessions.NewLog(g.log, s.id, p.User)
	s.outbox = wire.NewOutbox(g.metrics.OutboxDropped, g.metrics.StreamMessageMoved)
	s.end = func(reason string) { g.endLater(s, reason) }

	member, result, err := g.pool.Attach(r.Context(), pool.Attach{Identity: g.identity(r, p, access, s), Caller: s, Params: params})
	if err != nil {
		return g.attachError(w, msg, err)
	}
	s.member = member
	s.logh.SetWorker(member.WorkerID())
	version, err := resultVersion(result)
	if err != nil {
		member.Detach()
		g.metrics.SessionOpened("worker_error")
		return &wire.Error{Status: http.StatusOK, Code: jsonrpc.CodeInternalError, ID: msg.ID, Message: "the worker's initialize answer is unusable", Cause: err}
	}
	s.primes = version >= primingVersion
	// Idleness counts from the open, not the worker's start: a slow login is not quiet.
	s.mu.Lock()
	s.lastActive = time.Now()
	s.mu.Unlock()
	if reason := g.admit(s); reason != "" {
		member.Detach()
		if reason == sessions.ReasonShutdown {
			g.metrics.SessionOpened("shutdown")
			return wire.Overloaded(msg.ID, "the gateway is shutting down", shutdownRetryAfter, nil)
		}
		g.metrics.SessionOpened("worker_error")
		return wire.Overloaded(msg.ID, "the session's worker ended as the session opened ("+reason+")", workerRetryAfter, nil)
	}
	committed = true
	g.metrics.SessionOpened("ok")
	s.log.Info("session opened", "read_only", access.ReadOnly, "protocol_version", version, "pid", member.WorkerPid())

	w.Header().Set(headerSessionID, s.id)
	body := (&jsonrpc.Message{ID: msg.ID, Result: result}).Encode()
	g.trace.Outbound(s.id, body)
	wire.WriteBody(w, http.StatusOK, body)
	return nil
}

func (g *Gateway) identity(r *http.Request, p auth.Principal, access policy.Access, s *session) pool.Identity {
	id := poolIdentity(p, access, bearer(r))
	id.Session = s.id
	return id
}

func poolIdentity(p auth.Principal, access policy.Access, token string) pool.Identity {
	return pool.Identity{Issuer: p.Issuer, Subject: p.Subject, User: p.User, Scopes: p.Scopes,
		Audience: p.Audience(), Expiry: p.Expiry, ReadOnly: access.ReadOnly, Token: token}
}

// attachError answers and counts an initialize whose worker could not be had.
func (g *Gateway) attachError(w http.ResponseWriter, msg *jsonrpc.Message, err error) error {
	var rate *limit.RateError
	var refused *pool.RefusedError
	outcome := "worker_error"
	switch {
	case errors.As(err, &rate):
		outcome = "rate"
	case errors.Is(err, pool.ErrTooManyWorkers):
		outcome = "limit"
	case errors.Is(err, pool.ErrClosed):
		outcome = "shutdown"
	case errors.Is(err, pool.ErrInitTimeout):
		outcome = "worker_timeout"
	case errors.Is(err, context.Canceled):
		g.metrics.SessionOpened("client_gone")
		return nil
	case errors.As(err, &refused):
		g.metrics.SessionOpened(outcome)
		g.log.Warn("worker refused initialize", "error", textclip.Bytes(refused.Answer, 512))
		body := (&jsonrpc.Message{ID: msg.ID, Error: refused.Answer}).Encode()
		g.trace.Outbound("", body)
		wire.WriteBody(w, http.StatusOK, body)
		return nil
	}
	g.metrics.SessionOpened(outcome)
	return attachFailed(msg.ID, err)
}

// negotiate passes the client's protocol version on if spoken here, else asks for the latest.
func negotiate(msg *jsonrpc.Message) (json.RawMessage, error) {
	params, err := msg.ParamsObject() // an error for params absent, null or not an object
	if err != nil {
		return nil, errors.New("initialize needs params with a protocolVersion")
	}
	if v, _, _ := params.String("protocolVersion"); slices.Contains(supportedVersions, v) {
		return msg.Params, nil
	}
	latest := json.RawMessage(strconv.Quote(supportedVersions[0]))
	out := params.Edit(func(key string, value json.RawMessage) json.RawMessage {
		if key == "protocolVersion" {
			return latest
		}
		return value
	})
	if !params.Has("protocolVersion") {
		out = wire.AddMember(out, "protocolVersion", string(latest))
	}
	return out, nil
}

func resultVersion(result json.RawMessage) (string, error) {
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(result, &res); err != nil {
		return "", err
	}
	if !slices.Contains(supportedVersions, res.ProtocolVersion) {
		return "", errors.New("the worker chose protocol version " + textclip.Quote(res.ProtocolVersion) +
			", which the gateway does not speak")
	}
	return res.ProtocolVersion, nil
}
