package gateway

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/sessions"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
)

func (s *session) currentAccess() policy.Access {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.access
}

// stepUp moves a read-only session whose token may write to the read-write worker, as a 403
// asks. A session whose worker keeps the user's login between calls (GemStone) is not moved to
// another login behind the client's back: it ends, and this request gets 404, so that the
// client opens a new session with its token, a fresh login it knows to be fresh.
func (g *Gateway) stepUp(r *http.Request, s *session, id json.RawMessage, p auth.Principal, decided policy.Access) *wire.Error {
	current := s.currentAccess()
	if !current.ReadOnly || decided.ReadOnly || len(decided.Missing()) > 0 {
		return nil
	}
	if g.pool.KeepsLogin() {
		g.endSession(s, sessions.ReasonStepUp)
		return wire.SessionNotFound(id)
	}
	if err := s.member.Move(r.Context(), g.identity(r, p, decided, s)); err != nil {
		s.log.Warn("could not move the session to a read-write worker; it stays read-only", "error", err)
		return nil
	}
	s.mu.Lock()
	s.access = decided
	s.forgetHintsLocked() // another worker's
	if s.stepUpStreams != nil {
		s.stepUpStreams() // a read-only token's stream may not listen to a read-write session
	}
	s.mu.Unlock()
	s.logh.SetWorker(s.member.WorkerID())
	s.log.Info("session stepped up to read-write")
	changed := jsonrpc.Notification("notifications/tools/list_changed", nil).Encode()
	s.outbox.NoteDropped(s.log, s.outbox.Push(changed))
	return nil
}

// readWriteLater ends a read-only token's stream when its session steps up; nil if moot. A
// session read-write already stepped up since the stream's gates passed: ended at once.
func (g *Gateway) readWriteLater(s *session, p auth.Principal) context.Context {
	if !g.decide(p).ReadOnly {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.access.ReadOnly {
		return steppedUpAlready
	}
	if s.steppedUp == nil {
		s.steppedUp, s.stepUpStreams = context.WithCancel(context.Background())
	}
	return s.steppedUp
}

// steppedUpAlready is the end of a read-only token's stream whose session is read-write.
var steppedUpAlready = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
