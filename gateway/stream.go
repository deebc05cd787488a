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

// handleGet serves the session's server-to-client stream: the outbox drained as it fills,
// with keepalive comments between. The newest stream of a session wins.
//
// An idle stream waits under this handler, and under the whole handler chain, for as long as
// its client stays; the runtime keeps a goroutine's stack at twice what the frames on it use
// at least, so every frame on the way to the wait is paid by every idle session. Hence the
// work before and around the wait runs in functions of its own that have returned by then.
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

// streamRequest applies the gates of a GET and reads its Last-Event-ID: the session, and the
// stream (0, the session's own; else a POST's) and position to resume after, if asked. It
// answers a refused request itself and returns a nil session then.
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

// forgetBearer drops the verified bearer token from a stream's request headers. net/http
// holds the request for as long as its handler runs, and an idle stream runs for hours: the
// token's string, a kilobyte or more, would stay reachable all that time, though nothing
// reads it after admission. The value's slot is cleared too, since net/http's header parser
// backs all of a request's header values with one array, which the other headers keep
// alive. The stream's handlers must not hold the request either, whose context carries the
// verified token (auth.TokenFrom): they keep its done channel.
//
// This frees the gateway's own copy only. The connection's read buffer (HTTP/1.1, and TLS's
// record buffers) still holds the request's bytes until the connection reads again, and an
// HTTP/2 client that lets HPACK index the header (Go's does) leaves it in the connection's
// decoder table: net/http owns both.
func forgetBearer(h http.Header) {
	if v, ok := h["Authorization"]; ok {
		clear(v)
		delete(h, "Authorization")
	}
}

func (g *Gateway) streamEnded(s *session, gen uint64) {
	s.outbox.Detach()
	s.streamClosed(gen, time.Now())
	g.metrics.StreamClosed()
}

// openStream starts the session's stream and replays what a resumed one missed. It runs
// aside, on a goroutine that ends with it: what it needs on the stack (resumption, encoding,
// net/http's writing of the headers) never grows the stack of the goroutine that waits.
func (g *Gateway) openStream(st *wire.SSE, s *session, after uint64, resumed bool) bool {
	store := s.outbox.Store()
	if !resumed {
		after = store.Position(0)
	}
	if st.Start() != nil || st.Prime(store.ID(0, after), wire.SSERetry) != nil {
		return false
	}
	if resumed { // what the lost stream was sent, or taken for and never sent, after its last id
		evs, _, _, ok := store.Since(0, after)
		if !ok {
			return false
		}
		for _, e := range evs {
			if st.EventID(store.ID(0, e.Seq), e.Data) != nil {
				return false
			}
		}
	}
	return true
}

// serveStream serves the session's own stream, from after if resumed: it drains the outbox
// into it, with keepalive comments between, until the stream is superseded, lost or the
// gateway stops, or done (the request's context) or end (sessions.StreamEnd) is closed. An idle stream waits here, under
// the whole handler chain, for as long as the client stays: the frames below it are what
// every idle session pays in stack, so its opening and its writes are kept out of this frame
// (openStream, sendTaken). It takes the context's done channel, not the request: nothing on
// the stack then holds the request the middleware derived (its context with the principal
// and the token's claims), and that is garbage while the stream idles.
//
//go:noinline
func (g *Gateway) serveStream(w http.ResponseWriter, done, end <-chan struct{}, s *session, after uint64, resumed bool) {
	gen := s.outbox.Attach()
	s.streamOpened()
	g.metrics.StreamOpened()
	defer g.streamEnded(s, gen)
	st := g.newSSE(w)
	st.Stop = g.stopping // at shutdown the stream ends, between chunks of a long message too
	var opened bool
	aside.Run(func() { opened = g.openStream(st, s, after, resumed) }) // net/http's first flush is deep
	if !opened {
		return
	}
	ka := g.keepalive.Slot()
	tick := ka.Tick()
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
		case <-tick:
			tick = ka.Tick()
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

// sendTaken writes messages taken from the outbox to the session's stream. They were logged
// as they were taken (TakeLogged): those a stream that dies under them never wrote are
// replayed to the stream that resumes after it.
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

// resumePost serves a GET that resumes a POST's answer stream after seq: the events it
// missed, then the rest live, ending after the answer, or when reqDone (the request's
// context) is closed. It runs as long as the call does, which may be hours: like serveStream it
// takes the done channel, not the request, whose context holds the verified bearer token.
func (g *Gateway) resumePost(w http.ResponseWriter, reqDone, end <-chan struct{}, s *session, sid, after uint64) {
	store := s.outbox.Store()
	gen := store.Attach(sid)
	defer store.Detach(sid)
	st := g.newSSE(w)
	var opened bool
	aside.Run(func() { // net/http's first flush is deep, as in serveStream
		opened = st.Start() == nil && st.Prime(store.ID(sid, after), wire.SSERetry) == nil
	})
	if !opened {
		return
	}
	ka := g.keepalive.Slot()
	tick := ka.Tick()
	sessionDone := s.done
	var giveUp <-chan time.Time
	for {
		if !store.Current(sid, gen) {
			return // a newer resumption of the same stream took over
		}
		evs, done, wake, ok := store.Since(sid, after)
		if !ok {
			return // its events went (bounds) while it was away: end, the client may retry
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
		case <-tick:
			tick = ka.Tick()
			if st.Comment("keepalive") != nil {
				return
			}
		case <-reqDone:
			return
		case <-end:
			return
		case <-sessionDone:
			// The session ended under the call: the call's error, the answer its client is
			// owed, is being logged by the POST's handler. The stream waits a moment for it.
			// (At gemgate's shutdown it goes on as the POST's own stream does: it ends with
			// its call, which the grace lets finish.)
			sessionDone = nil
			t := time.NewTimer(sessionEndAnswerWait)
			defer t.Stop()
			giveUp = t.C
		case <-giveUp:
			return
		}
	}
}

// sessionEndAnswerWait bounds how long a resumed POST stream waits, after its session ended,
// for its call's error to be logged.
const sessionEndAnswerWait = 2 * time.Second

// badEventID is the answer to a Last-Event-ID that cannot be resumed.
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
		// Another DELETE (or the session's own end) took it between the lookup and here.
		wire.SessionNotFound().Write(w)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// sessionFor applies the session gates of GET and DELETE: 400 without a session id, 404 for
// an unknown one or one that belongs to someone else, 400 for an unsupported version.
func (g *Gateway) sessionFor(r *http.Request) (*session, *wire.Error) {
	id := r.Header.Get(headerSessionID)
	if id == "" {
		return nil, wire.BadRequest("missing Mcp-Session-Id header")
	}
	p, _ := auth.PrincipalFrom(r.Context())
	s := g.sessions.Lookup(id, ownerOf(p))
	if s == nil {
		return nil, wire.SessionNotFound()
	}
	if he := checkProtocolVersion(r); he != nil {
		return nil, he
	}
	// Opening a stream is not activity: only real MCP traffic keeps a session from idling.
	return s, nil
}

// sessionGates applies sessionFor and then the token's refusals for what a GET or DELETE does
// with the session: a narrowed token's (narrowed.go) and a grant's.
func (g *Gateway) sessionGates(r *http.Request, what string) (*session, *wire.Error) {
	s, he := g.sessionFor(r)
	if he != nil {
		return nil, he
	}
	p, _ := auth.PrincipalFrom(r.Context())
	if he := g.narrowedRefusal(s, p, what); he != nil {
		return nil, he
	}
	return s, g.grantRefusal(s, p, nil, what)
}

// endSession unmaps a session and detaches it from its worker; the reason goes to the log and
// metrics. It reports whether this call ended it (false: it was ended already).
func (g *Gateway) endSession(s *session, reason string) bool {
	if !g.sessions.Remove(s) {
		return false
	}
	s.mu.Lock()
	s.closed, s.reason = true, reason
	s.mu.Unlock()
	s.outbox.Close()
	s.member.Detach()
	g.metrics.SessionClosed(reason)
	s.log.Info("session ended", "reason", reason, "lifetime", time.Since(s.opened).Round(time.Millisecond))
	close(s.done)
	return true
}
