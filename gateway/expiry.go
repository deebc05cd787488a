package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/worker"
)

// What happens to a worker whose backend login was made with a credential that has since
// expired. Backends such as GemStone check a token only at login, so the login outlives it.
const (
	// ExpiryKeep lets the worker run on; every request still needs a live token of the
	// session's owner.
	ExpiryKeep = "keep"
	// ExpiryRestart starts the worker again with a fresh credential at the next request
	// after expiry; the session id stays, the worker's state (uncommitted work) does not.
	ExpiryRestart = "restart"
	// ExpiryEnd ends the session at the next request after expiry; the client meets 404 and
	// opens a new one.
	ExpiryEnd = "end"
)

func validExpiryPolicy(p string) bool {
	return p == "" || p == ExpiryKeep || p == ExpiryRestart || p == ExpiryEnd
}

// workerSpec completes a launcher's spec with the session's routing, logging and trace.
func (g *Gateway) workerSpec(s *Session, spec worker.Spec) worker.Spec {
	spec.OnMessage = s.onWorkerMessage
	spec.Logger = s.log
	if g.trace != nil {
		spec.OnTrace = func(dir string, line []byte) { g.trace.line(dir, s.id, line) }
	}
	return spec
}

// worker is the session's current worker process; a restart replaces it.
func (s *Session) worker() *worker.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// credentialExpired reports whether the worker's credential has expired at now.
func (s *Session) credentialExpired(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.credExpiry.IsZero() && now.After(s.credExpiry)
}

// applyExpiryPolicy runs before a request reaches the worker. It returns an error the request
// must meet instead (404 once the session has ended).
func (g *Gateway) applyExpiryPolicy(r *http.Request, s *Session, p auth.Principal, id json.RawMessage) *httpError {
	if !s.credentialExpired(time.Now()) {
		return nil
	}
	switch g.opts.OnTokenExpiry {
	case ExpiryEnd:
		s.log.Info("worker credential expired; ending the session (on_token_expiry=end)")
		g.endSession(s, ReasonTokenExpired)
	case ExpiryRestart:
		if s.busy() {
			return nil // never pull a worker from under a call; the next request tries again
		}
		err := g.restartWorker(r, s, p)
		if err == nil {
			return nil
		}
		s.log.Warn("could not restart the worker with a fresh credential; ending the session", "error", err)
		g.endSession(s, ReasonTokenExpired)
	default:
		return nil
	}
	e := sessionNotFound()
	e.ID = id
	return e
}

// restartWorker replaces the session's worker with one started with a credential from the
// current request's token, and brings it to where the old one was: initialized with the
// client's own initialize parameters.
func (g *Gateway) restartWorker(r *http.Request, s *Session, p auth.Principal) error {
	// Requests wait for the new worker rather than reach the old one as it goes.
	s.restartMu.Lock()
	defer s.restartMu.Unlock()
	s.mu.Lock()
	if len(s.calls) > 0 || s.credExpiry.IsZero() || !time.Now().After(s.credExpiry) {
		s.mu.Unlock()
		return nil // a call slipped in, or another request restarted it already
	}
	readOnly, params := s.access.ReadOnly, s.initParams
	s.mu.Unlock()

	launch, err := g.opts.Workers.Launch(r.Context(), Identity{Principal: p, ReadOnly: readOnly, Session: s.id, Token: bearer(r)})
	if err != nil {
		return err
	}
	proc, err := worker.Start(g.workerSpec(s, launch.Spec))
	if err != nil {
		return err
	}
	g.metrics.workerStarted()
	call, err := proc.Send(&jsonrpc.Message{ID: json.RawMessage(strconv.Quote("gemgate-restart")), Method: "initialize", Params: params})
	var resp *jsonrpc.Message
	if err == nil {
		select {
		case resp = <-call.Result():
		case <-time.After(g.opts.InitTimeout):
			err = errors.New("the new worker did not answer initialize in time")
		}
	}
	if err == nil && resp.Error != nil {
		err = fmt.Errorf("the new worker refused initialize: %s", resp.Error)
	}
	if err == nil {
		err = proc.Notify(&jsonrpc.Message{Method: "notifications/initialized"})
	}
	if err != nil {
		proc.Stop()
		g.metrics.workerExited(nil)
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		proc.Stop()
		g.metrics.workerExited(nil)
		return errors.New("the session ended during the restart")
	}
	old := s.proc
	s.proc, s.credExpiry = proc, launch.CredentialExpiry
	s.mu.Unlock()
	old.Stop() // watch sees the swap and keeps the session
	s.log.Info("worker restarted with a fresh credential (on_token_expiry=restart); its unsaved state is gone", "pid", proc.Pid())
	return nil
}
