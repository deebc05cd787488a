package gateway

import (
	"net/http"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/sessions"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/internal/aside"
	"github.com/gemgate/gemgate/jsonrpc"
)

// handleGet serves the session's server-to-client stream; the newest stream of a session wins.
// The runtime keeps an idle stream's stack at twice what its frames use, so the work around
// the wait runs in functions that have returned by then.
func (g *Gateway) handleGet(w http.ResponseWriter, r *http.Request) {
	s, sid, after, resumed := g.streamRequest(w, r)
	if s == nil {
		return
	}
	p, _ := auth.PrincipalFrom(r.Context())
	end, stop := sessions.StreamEnd(r, g.readWriteLater(s, p))
	defer stop()
	if sid != 0 {
		g.resumePost(w, r.Context().Done(), end, s, sid, after)
	} else {
		g.serveStream(w, r.Context().Done(), end, s, after, resumed)
	}
}

// streamRequest applies a GET's gates and reads its Last-Event-ID: the stream to resume (0:
// the session's own) and the position. A refused request is answered here (nil session).
//
//go:noinline
func (g *Gateway) streamRequest(w http.ResponseWriter, r *http.Request) (s *session, sid, after uint64, resumed bool) {
	s, he := g.sessionGates(r, "the session's stream")
	if he != nil {
		he.Write(w)
		return nil, 0, 0, false
	}
	if !accepts(r.Header, mediaSSE) {
		(&wire.Error{Status: http.StatusNotAcceptable, Code: jsonrpc.CodeInvalidRequest,
			Message: "the session stream is text/event-stream; Accept must allow it"}).Write(w)
		return nil, 0, 0, false
	}
	forgetBearer(r.Header)
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		return s, 0, 0, false
	}
	sid, seq, err := s.outbox.Store().Resolve(last)
	if err != nil {
		s.log.Info("stream resumption refused", "error", err)
		badEventID(err).Write(w)
		return nil, 0, 0, false
	}
	return s, sid, seq, sid == 0
}

// forgetBearer drops the verified token from the headers net/http holds while a stream idles,
// clearing the slot too (all values share one array). The stream's handlers keep the done
// channel, not the context (auth.TokenFrom). net/http's own buffers are out of reach.
func forgetBearer(h http.Header) {
	if v, ok := h["Authorization"]; ok {
		clear(v)
		delete(h, "Authorization")
	}
}

func (g *Gateway) streamEnded(s *session) {
	s.outbox.Detach()
	s.streamClosed(time.Now())
	g.metrics.StreamClosed()
}

// openStream starts the session's stream and replays what a resumed one missed (aside.Run).
func (g *Gateway) openStream(st *wire.SSE, s *session, after uint64, resumed bool) bool {
	store := s.outbox.Store()
	if !resumed {
		after = store.Position()
	}
	if st.Start() != nil || s.primes && st.Prime(store.ID(0, after), wire.SSERetry) != nil {
		return false
	}
	if resumed { // what the lost stream was sent, or taken for, after its last id
		evs, _, _, ok := store.Since(0, after)
		if !ok {
			return false
		}
		for _, e := range evs {
			g.trace.Outbound(s.id, e.Data)
			if st.EventID(store.ID(0, e.Seq), e.Data) != nil {
				return false
			}
		}
	}
	return true
}

// serveStream drains the outbox into the session's stream until it is superseded or lost, the
// gateway stops, or done or end (sessions.StreamEnd) closes. Idle streams wait here: opening
// and writing stay out of this frame, which holds no request.
//
//go:noinline
func (g *Gateway) serveStream(w http.ResponseWriter, done, end <-chan struct{}, s *session, after uint64, resumed bool) {
	gen := s.outbox.Attach()
	s.streamOpened()
	g.metrics.StreamOpened()
	defer g.streamEnded(s)
	st := g.newSSE(w)
	st.Stop = g.stopping // ends a long message between chunks at shutdown
	var opened bool
	aside.Run(func() { opened = g.openStream(st, s, after, resumed) }) // net/http's first flush is deep
	if !opened {
		return
	}
	ka := g.keepaliveTicker()
	for {
		evs, wake, ok := s.outbox.TakeLogged(gen)
		if !ok {
			return // superseded by a newer stream, or the session ended
		}
		if len(evs) > 0 && !g.sendTaken(st, s, evs) {
			return
		}
		select {
		case <-wake:
		case <-ka.C:
			if err := st.Comment("keepalive"); err != nil {
				return
			}
		case <-done:
			return
		case <-end:
			return
		case <-g.stopping:
			_ = st.RetryHint(drainRetryAfter)
			return
		}
	}
}

// sendTaken writes messages taken (and logged for replay) from the outbox.
//
//go:noinline
func (g *Gateway) sendTaken(st *wire.SSE, s *session, evs []wire.TakenEvent) bool {
	for _, e := range evs {
		g.trace.Outbound(s.id, e.Data)
		if err := st.EventID(e.ID, e.Data); err != nil {
			s.log.Info("session stream lost while writing", "error", err)
			return false
		}
	}
	return true
}

// resumePost serves a GET resuming a POST's answer stream: what it missed, then the rest live.
func (g *Gateway) resumePost(w http.ResponseWriter, reqDone, end <-chan struct{}, s *session, sid, after uint64) {
	store := s.outbox.Store()
	gen := store.Attach(sid)
	defer store.Detach(sid)
	st := g.newSSE(w)
	var opened bool
	aside.Run(func() { // as in serveStream
		opened = st.Start() == nil && (!s.primes || st.Prime(store.ID(sid, after), wire.SSERetry) == nil)
	})
	if !opened {
		return
	}
	ka := g.keepaliveTicker()
	sessionDone := s.done
	var giveUp <-chan time.Time
	for {
		if !store.Current(sid, gen) {
			return // a newer resumption of the same stream took over
		}
		evs, done, wake, ok := store.Since(sid, after)
		if !ok {
			return // its events went (bounds) while it was away; the client may retry
		}
		for _, e := range evs {
			g.trace.Outbound(s.id, e.Data)
			if st.EventID(store.ID(sid, e.Seq), e.Data) != nil {
				return
			}
			after = e.Seq
		}
		if done {
			return // the answer is out: the stream ends, as the POST's would have
		}
		select {
		case <-wake:
		case <-ka.C:
			if st.Comment("keepalive") != nil {
				return
			}
		case <-reqDone:
			return
		case <-end:
			return
		case <-sessionDone:
			// Wait a moment for the call's error, which the POST's handler is logging.
			sessionDone = nil
			t := time.NewTimer(sessionEndAnswerWait)
			defer t.Stop()
			giveUp = t.C
		case <-giveUp:
			return
		}
	}
}

const sessionEndAnswerWait = 2 * time.Second

func badEventID(err error) *wire.Error {
	return &wire.Error{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest, Message: err.Error(),
		Data: map[string]any{"kind": "last_event_id"}}
}

func (g *Gateway) handleDelete(w http.ResponseWriter, r *http.Request) {
	s, he := g.sessionGates(r, "ending the session")
	if he != nil {
		he.Write(w)
		return
	}
	if !g.endSession(s, sessions.ReasonDeleted) {
		// Another DELETE (or the session's own end) took it since the lookup.
		wire.SessionNotFound(nil).Write(w)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// sessionGates applies the gates of GET and DELETE; a stream is not activity (no touch).
func (g *Gateway) sessionGates(r *http.Request, what string) (*session, *wire.Error) {
	id := r.Header.Get(headerSessionID)
	if id == "" {
		return nil, wire.BadRequest("missing Mcp-Session-Id header")
	}
	p, _ := auth.PrincipalFrom(r.Context())
	s := g.sessions.Lookup(id, ownerOf(p))
	if s == nil {
		return nil, wire.SessionNotFound(nil)
	}
	if he := checkProtocolVersion(r); he != nil {
		return nil, he
	}
	if he := g.narrowedRefusal(s, p, what); he != nil {
		return nil, he
	}
	return s, g.grantRefusal(s.member, p, nil, what, s.log)
}

// endSession unmaps a session and detaches it from its worker; false if it had ended already.
func (g *Gateway) endSession(s *session, reason string) bool {
	if !g.sessions.Remove(s) {
		return false
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.outbox.Close()
	if reason == sessions.ReasonShutdown {
		s.member.EndCallsWith(stoppedCall) // as a 2026-07-28 call's: it may have taken effect
	}
	s.member.Detach()
	g.metrics.SessionClosed(reason)
	s.log.Info("session ended", "reason", reason, "lifetime", time.Since(s.opened).Round(time.Millisecond))
	close(s.done)
	return true
}
