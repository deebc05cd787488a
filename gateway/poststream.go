package gateway

import (
	"net/http"
	"time"
)

// postStream is the SSE stream that answers one POSTed request. It starts at its first
// event with a priming event (an id and the retry delay), and every event is logged for
// replay before it is written, so that a client whose connection is lost mid-call can GET
// the rest, answer included, with Last-Event-ID.
type postStream struct {
	w      http.ResponseWriter
	store  *resumeStore
	st     sse // set up at the first event
	begun  bool
	sid    uint64
	primed bool // the client holds an id it can resume from
	live   bool // the connection still takes writes
}

func (p *postStream) started() bool   { return p.begun }
func (p *postStream) resumable() bool { return p.primed }

// event logs and writes one message; last marks the answer. It reports whether the client's
// connection took it.
func (p *postStream) event(ev []byte, last bool) bool {
	return p.placed(placedEvent{buf: ev}, last) // no room in front: framed by copying
}

// placed is event for a message encoded in place for its frame (sse.go): not copied again.
func (p *postStream) placed(pe placedEvent, last bool) bool {
	ev := pe.data()
	if !p.begun {
		// The stream starts with this event: headers, priming event and event go in one
		// write; an answer alone makes the whole stream.
		p.begun = true
		p.st.init(p.w)
		p.sid = p.store.open()
		seq := p.store.recordSeq(p.sid, ev, last)
		var ids [2 * maxEventIDLen]byte
		prime := p.store.appendEventID(ids[:0], p.sid, 0)
		id := p.store.appendEventID(prime[len(prime):], p.sid, seq)
		var head [maxEventIDLen + 48]byte
		f := pe.frame(appendPrime(head[:0], prime, sseRetry), id)
		if last {
			p.live = p.st.whole(f) == nil
		} else {
			p.live = p.st.begin(f) == nil
		}
		p.primed = p.live
		return p.live
	}
	if !p.primed {
		return false
	}
	seq := p.store.recordSeq(p.sid, ev, last)
	if p.live {
		var ids [maxEventIDLen]byte
		id := p.store.appendEventID(ids[:0], p.sid, seq)
		if p.st.write(pe.frame(nil, id)) != nil {
			p.live = false
		}
	}
	return p.live
}

// lose records that the connection is gone: later events are only logged.
func (p *postStream) lose() { p.live = false }

// finish ends the stream without an answer (a cancelled call), so a resumed reader ends too:
// one that resumes from what reached the client of a first write that failed midway, too.
func (p *postStream) finish() {
	if p.begun {
		p.store.finish(p.sid)
	}
}

func (p *postStream) abandoned(lost time.Time) bool { return p.store.abandoned(p.sid, lost) }
