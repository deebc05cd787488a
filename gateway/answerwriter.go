package gateway

import (
	"net/http"

	"github.com/gemgate/gemgate/gateway/trace"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
)

// answerWriter writes a forwarded request's answer; a 2025-x stream is resumable (store).
type answerWriter struct {
	st        wire.SSE
	trace     *trace.Tracer
	traceID   string           // the session's id in the trace; "" for a sessionless request
	store     *wire.EventStore // nil: not resumable
	canStream bool             // the client accepts SSE; else events are dropped
	asStream  bool             // an answer alone goes as a stream too
	begun     bool
	prime     bool // a resumable stream starts with a priming event (the session's revision expects it)
	sid       uint64
	primed    bool // the client holds an id it can resume from
	live      bool // the connection still takes writes
}

func (g *Gateway) newAnswerWriter(w http.ResponseWriter, traceID string, store *wire.EventStore, canStream bool) *answerWriter {
	p := &answerWriter{trace: g.trace, traceID: traceID, store: store, canStream: canStream,
		asStream: canStream && g.opts.PostAnswers != PostAnswersJSON}
	p.st.Init(w, g.opts.writeTimeout)
	return p
}

func (g *Gateway) newSSE(w http.ResponseWriter) *wire.SSE { return wire.NewSSE(w, g.opts.writeTimeout) }

// event writes one message about the call; false if the connection did not take it.
func (p *answerWriter) event(ev []byte) bool {
	if !p.canStream {
		return true
	}
	p.trace.Outbound(p.traceID, ev)
	return p.placed(wire.CopiedEvent(ev), false)
}

// answer ends the request: in the stream, as one if asStream allows, else JSON with status.
func (p *answerWriter) answer(m *jsonrpc.Message, asStream bool, status int) {
	if p.begun || asStream && p.canStream {
		pe := wire.PlaceEvent(m) // encoded once, in its frame
		p.trace.Outbound(p.traceID, pe.Data())
		p.placed(pe, true)
		return
	}
	body := m.Encode()
	p.trace.Outbound(p.traceID, body)
	p.st.WriteJSON(status, body)
}

// placed writes an event encoded in place (sse.go); last marks the answer.
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

// begin writes headers, priming event and first event in one write.
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
		if p.prime {
			f = pe.Frame(wire.AppendPrime(head[:0], prime, wire.SSERetry), id)
		} else {
			f = pe.Frame(nil, id)
		}
	}
	if last {
		p.live = p.st.Whole(f) == nil
	} else {
		p.live = p.st.Begin(f) == nil
	}
	p.primed = p.live && p.store != nil
	return p.live
}

// cancelled ends a request the client cancelled: 202 and no answer, or the stream's end.
func (p *answerWriter) cancelled() {
	if !p.begun {
		p.st.WriteHeader(http.StatusAccepted)
	}
	p.finish()
}

// finish ends the stream without an answer, so a resumed reader ends too.
func (p *answerWriter) finish() {
	if p.begun && p.store != nil {
		p.store.Finish(p.sid)
	}
}
