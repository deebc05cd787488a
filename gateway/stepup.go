package gateway

import (
	"context"
	"net/http"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
)

// currentAccess is what the session may do before this request's token is considered.
func (s *session) currentAccess() policy.Access {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.access
}

// stepUp moves a read-only session whose request carries a token with the write scope to the
// user's read-write worker (started if need be), and tells the client its tool list changed.
// This is the flow a 403 insufficient_scope asks the client for; without it the session would
// stay read-only for good. The reverse never happens here: a read-write session presenting a
// read-only token is narrowed per request, so its mutating calls meet 403.
func (g *Gateway) stepUp(r *http.Request, s *session, p auth.Principal, decided policy.Access) {
	current := s.currentAccess()
	if !current.ReadOnly || decided.ReadOnly || len(decided.Missing()) > 0 {
		return
	}
	if err := s.member.Move(r.Context(), g.identity(r, p, decided, s)); err != nil {
		s.log.Warn("could not move the session to a read-write worker; it stays read-only", "error", err)
		return
	}
	s.mu.Lock()
	s.access = decided
	clear(s.hints) // another worker: what the old one said of its tools does not hold
	if s.stepUpStreams != nil {
		s.stepUpStreams() // a read-only token's stream may not listen to a read-write session
	}
	s.mu.Unlock()
	s.logh.SetWorker(s.member.WorkerID())
	s.log.Info("session stepped up to read-write")
	s.outbox.Push(jsonrpc.Notification("notifications/tools/list_changed", nil).Encode())
}

// readWriteLater is done when the session steps up to read-write, for a stream a read-only
// token opens on a read-only session; nil when that token's stream has nothing to wait for:
// the session is read-write already (narrowedRefusal refused the stream), or the token may
// write.
func (g *Gateway) readWriteLater(s *session, p auth.Principal) context.Context {
	if !g.decide(p).ReadOnly {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.access.ReadOnly {
		return nil
	}
	if s.steppedUp == nil {
		s.steppedUp, s.stepUpStreams = context.WithCancel(context.Background())
	}
	return s.steppedUp
}
