package gateway

import (
	"net/http"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/jsonrpc"
)

// keepaliveInterval is sized to proxy and NAT idle timeouts, not to sessions.
const keepaliveInterval = 15 * time.Second

// handleGet serves the session's server-to-client stream: the outbox drained as it fills,
// with keepalive comments between. The newest stream of a session wins.
func (g *Gateway) handleGet(w http.ResponseWriter, r *http.Request) {
	s, he := g.sessionFor(r)
	if he != nil {
		he.write(w)
		return
	}
	if !accepts(r.Header, mediaSSE) {
		(&httpError{Status: http.StatusNotAcceptable, Code: jsonrpc.CodeInvalidRequest,
			Message: "the session stream is text/event-stream; Accept must allow it"}).write(w)
		return
	}
	gen := s.outbox.Attach()
	s.streamOpened()
	g.metrics.streamOpened()
	defer func() {
		s.outbox.Detach(gen)
		s.streamClosed(gen, time.Now())
		g.metrics.streamClosed()
	}()
	st := newSSE(w)
	if err := st.start(nil); err != nil {
		return
	}
	keepalive := time.NewTicker(keepaliveInterval)
	defer keepalive.Stop()
	for {
		msgs, wake, ok := s.outbox.Take(gen)
		if !ok {
			return // superseded by a newer stream, or the session ended
		}
		for _, m := range msgs {
			g.trace.outbound(s.id, m)
			if err := st.event(m); err != nil {
				s.log.Info("session stream lost while writing", "error", err)
				return
			}
		}
		select {
		case <-wake:
		case <-keepalive.C:
			if err := st.comment("keepalive"); err != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-g.stopping:
			return
		}
	}
}

func (g *Gateway) handleDelete(w http.ResponseWriter, r *http.Request) {
	s, he := g.sessionFor(r)
	if he != nil {
		he.write(w)
		return
	}
	g.endSession(s, ReasonDeleted)
	w.WriteHeader(http.StatusOK)
}

// sessionFor applies the session gates of GET and DELETE: 400 without a session id, 404 for
// an unknown one or one that belongs to someone else, 400 for an unsupported version.
func (g *Gateway) sessionFor(r *http.Request) (*session, *httpError) {
	id := r.Header.Get(headerSessionID)
	if id == "" {
		return nil, badRequest("missing Mcp-Session-Id header")
	}
	p, _ := auth.PrincipalFrom(r.Context())
	s := g.sessions.lookup(id, ownerOf(p))
	if s == nil {
		return nil, sessionNotFound()
	}
	if he := checkProtocolVersion(r); he != nil {
		return nil, he
	}
	// Opening a stream is not activity: only real MCP traffic keeps a session from idling.
	return s, nil
}

// endSession unmaps a session and detaches it from its worker; the reason goes to the log and metrics.
func (g *Gateway) endSession(s *session, reason string) {
	if !g.sessions.remove(s) {
		return
	}
	s.mu.Lock()
	s.closed, s.reason = true, reason
	s.mu.Unlock()
	s.outbox.Close()
	s.member.Detach()
	g.metrics.sessionClosed(reason)
	s.log.Info("session ended", "reason", reason, "lifetime", time.Since(s.opened).Round(time.Millisecond))
	close(s.done)
}
