package gateway

import (
	"cmp"
	"net/http"
	"time"

	"github.com/gemgate/gemgate/gateway/trace"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
)

// answerWriter writes the answer to one forwarded request, in either era: application/json,
// or an SSE stream that begins at its first event. A 2025-x session's stream is resumable
// (store): it starts with a priming event (an id and the retry delay), and every event is
// logged for replay before it is written, so that a client whose connection is lost mid-call
// can GET the rest, answer included, with Last-Event-ID. A 2026-07-28 stream has no
// resumption: no store, no priming event, no event ids.
type answerWriter struct {
	st        wire.SSE
	trace     *trace.Tracer
	traceID   string           // the session's id in the trace; "" for a sessionless request
	store     *wire.EventStore // nil: not resumable
	canStream bool             // the client accepts SSE; events for a client that does not are dropped
	asStream  bool             // an answer alone goes as a stream too (post_answers sse)
	begun     bool
	sid       uint64
	primed    bool // the client holds an id it can resume from
	live      bool // the connection still takes writes
}

func (g *Gateway) newAnswerWriter(w http.ResponseWriter, traceID string, store *wire.EventStore, canStream bool) *answerWriter {
	p := &answerWriter{trace: g.trace, traceID: traceID, store: store, canStream: canStream,
		asStream: canStream && g.opts.PostAnswers != PostAnswersJSON}
	p.st.Init(w, g.writeTimeout())
	return p
}

// newSSE is a stream whose writes are bounded by the gateway's write timeout.
func (g *Gateway) newSSE(w http.ResponseWriter) *wire.SSE { return wire.NewSSE(w, g.writeTimeout()) }

// writeTimeout bounds each write to a client (wire.WriteFlushed).
func (g *Gateway) writeTimeout() time.Duration { return cmp.Or(g.opts.writeTimeout, wire.WriteTimeout) }

func (p *answerWriter) resumable() bool { return p.primed }

// event writes one message about the call, before its answer. It reports whether the
// client's connection took it (a message dropped for a JSON-only client counts as taken).
func (p *answerWriter) event(ev []byte) bool {
	if !p.canStream {
		return true
	}
	p.trace.Outbound(p.traceID, ev)
	return p.placed(wire.CopiedEvent(ev), false) // no room in front: framed by copying
}

// answer ends the request with its answer: the last event of a stream that has begun; else a
// stream of the answer alone if asStream and the client accepts one; else JSON with status.
func (p *answerWriter) answer(m *jsonrpc.Message, asStream bool, status int) {
	if p.begun || asStream && p.canStream {
		pe := wire.PlaceEvent(m) // encoded once, in its frame, for the trace and the client
		p.trace.Outbound(p.traceID, pe.Data())
		p.placed(pe, true)
		return
	}
	body := m.Encode() // one encoding for the trace and the client
	p.trace.Outbound(p.traceID, body)
	p.st.WriteJSON(status, body)
}

// placed writes an event whose message is encoded in place for its frame (sse.go): not
// copied again; last marks the answer. It reports whether the connection took it.
func (p *answerWriter) placed(pe wire.PlacedEvent, last bool) bool {
	if !p.begun {
		return p.begin(pe, last)
	}
	if !p.primed && !p.live {
		return false
	}
	var ids [wire.MaxEventIDLen]byte
	id := ids[:0]
	if p.store != nil {
		id = p.store.AppendID(id, p.sid, p.store.Append(p.sid, pe.Data(), last))
	}
	if p.live && p.st.Write(pe.Frame(nil, id)) != nil {
		p.live = false
	}
	return p.live
}

// begin starts the stream with its first event: headers, priming event and event go in one
// write; an answer alone makes the whole stream.
func (p *answerWriter) begin(pe wire.PlacedEvent, last bool) bool {
	p.begun = true
	f := pe.Frame(nil, nil)
	if p.store != nil {
		p.sid = p.store.Open()
		seq := p.store.Append(p.sid, pe.Data(), last)
		var ids [2 * wire.MaxEventIDLen]byte
		prime := p.store.AppendID(ids[:0], p.sid, 0)
		id := p.store.AppendID(prime[len(prime):], p.sid, seq)
		var head [wire.MaxEventIDLen + 48]byte
		f = pe.Frame(wire.AppendPrime(head[:0], prime, wire.SSERetry), id)
	}
	if last {
		p.live = p.st.Whole(f) == nil
	} else {
		p.live = p.st.Begin(f) == nil
	}
	p.primed = p.live && p.store != nil
	return p.live
}

// lose records that the connection is gone: later events are only logged.
func (p *answerWriter) lose() { p.live = false }

// cancelled ends a request the client cancelled: 202 and no answer, or the stream's end.
func (p *answerWriter) cancelled() {
	if !p.begun {
		p.st.WriteHeader(http.StatusAccepted)
	}
	p.finish()
}

// finish ends the stream without an answer (a cancelled call), so a resumed reader ends too:
// one that resumes from what reached the client of a first write that failed midway, too.
func (p *answerWriter) finish() {
	if p.begun && p.store != nil {
		p.store.Finish(p.sid)
	}
}

// abandoned reports whether nobody came back for a lost stream's answer (resume.go).
func (p *answerWriter) abandoned(lost time.Time) bool { return p.store.Abandoned(p.sid, lost) }
