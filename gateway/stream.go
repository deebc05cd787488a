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
	store := s.outbox.resume
	after, resumed := uint64(0), false
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		sid, seq, err := store.resolve(last)
		if err != nil {
			s.log.Info("stream resumption refused", "error", err)
			badEventID(err).write(w)
			return
		}
		if sid != 0 {
			g.resumePost(w, r, s, sid, seq)
			return
		}
		after, resumed = seq, true
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
	if !resumed {
		after = store.position(0)
	}
	if st.start(nil) != nil || st.prime(store.eventID(0, after), sseRetry) != nil {
		return
	}
	if resumed { // what the lost stream was sent, or taken for and never sent, after its last id
		evs, _, _, ok := store.since(0, after)
		if !ok {
			return
		}
		for _, e := range evs {
			if st.eventID(store.eventID(0, e.seq), e.data) != nil {
				return
			}
		}
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
			// Logged before it is written: a message taken for a stream that dies under it
			// is replayed to the stream that resumes after it.
			if err := st.eventID(store.record(0, m, false), m); err != nil {
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
			_ = st.retryHint(drainRetryAfter)
			return
		}
	}
}

// resumePost serves a GET that resumes a POST's answer stream after seq: the events it
// missed, then the rest live, ending after the answer.
func (g *Gateway) resumePost(w http.ResponseWriter, r *http.Request, s *session, sid, after uint64) {
	store := s.outbox.resume
	gen := store.attach(sid)
	defer store.detach(sid)
	st := newSSE(w)
	if st.start(nil) != nil || st.prime(store.eventID(sid, after), sseRetry) != nil {
		return
	}
	keepalive := time.NewTicker(keepaliveInterval)
	defer keepalive.Stop()
	for {
		if !store.current(sid, gen) {
			return // a newer resumption of the same stream took over
		}
		evs, done, wake, ok := store.since(sid, after)
		if !ok {
			return // its events went (bounds) while it was away: end, the client may retry
		}
		for _, e := range evs {
			g.trace.outbound(s.id, e.data)
			if st.eventID(store.eventID(sid, e.seq), e.data) != nil {
				return
			}
			after = e.seq
		}
		if done {
			return // the answer is out: the stream ends, as the POST's would have
		}
		select {
		case <-wake:
		case <-keepalive.C:
			if st.comment("keepalive") != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-g.stopping:
			_ = st.retryHint(drainRetryAfter)
			return
		}
	}
}

// badEventID is the answer to a Last-Event-ID that cannot be resumed.
func badEventID(err error) *httpError {
	return &httpError{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest, Message: err.Error(),
		Data: map[string]any{"kind": "last_event_id"}}
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
