package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// awaitModern waits for a modern call's answer and writes it: application/json, or an SSE
// stream when the client accepts one and the call's progress or log lines come first (or
// post_answers is sse). Closing the stream, or the connection, cancels the call at the worker
// (2026-07-28: closing the response stream is cancellation). An error the spec maps to an
// HTTP status (404 unknown method, 400 invalid params, ...) goes as JSON with that status
// while no stream has started. It returns the audit outcome.
func (g *Gateway) awaitModern(w http.ResponseWriter, r *http.Request, c *modernCaller, call *pool.Call, msg *jsonrpc.Message, access policy.Access, pk *parked) (outcome string, parkedNow bool) {
	answerAsStream := g.opts.PostAnswers != PostAnswersJSON && acceptsSSE(r)
	var stream *modernSSE
	writeEvent := func(ev []byte) bool {
		if !acceptsSSE(r) {
			return true // a JSON-only client gets the answer alone
		}
		if stream == nil {
			stream = newModernSSE(w)
			if stream.start() != nil {
				return false
			}
		}
		g.trace.outbound("", ev)
		return stream.event(ev) == nil
	}
	var timeout <-chan time.Time
	if d := g.opts.Lifetime.RequestTimeout; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	// answer writes the call's answer (after the events that came before it) and ends the wait.
	answer := func(resp *jsonrpc.Message) (string, bool) {
		for _, ev := range c.events.take() {
			writeEvent(ev)
		}
		resp, outcome := g.modernAnswer(msg.Method, access, resp)
		if resp.Error == nil && pk.member.SessionlessWorker() {
			resp, outcome = g.passInputRequired(pk, resp, outcome)
		}
		out := *resp
		out.ID = msg.ID // after a retry, the retry's id: the original request is answered already
		resp = &out
		body := resp.Encode()
		if stream == nil && resp.Error != nil {
			g.trace.outbound("", body)
			writeBody(w, modernStatus(errorCode(resp)), body)
			return outcome, false
		}
		if stream == nil && answerAsStream { // the answer alone: one write (sse.go)
			g.trace.outbound("", body)
			_ = writeWholeStream(w, body)
			return outcome, false
		}
		if stream != nil || answerAsStream {
			writeEvent(body)
			return outcome, false
		}
		g.trace.outbound("", body)
		writeBody(w, http.StatusOK, body)
		return outcome, false
	}
	for {
		select {
		case req := <-c.requests:
			// The worker needs the client's input: park the call and answer input_required.
			pk.requests = gatherRequests(req, c.requests)
			result, err := g.park(pk)
			if err != nil {
				for _, req := range pk.requests {
					pk.member.Refuse(req.ID, err.Error())
				}
				continue // the worker carries on with the refusal; the call goes on
			}
			body := (&jsonrpc.Message{ID: msg.ID, Result: result}).Encode()
			if stream != nil || answerAsStream {
				writeEvent(body)
			} else {
				g.trace.outbound("", body)
				writeBody(w, http.StatusOK, body)
			}
			return "input_required", true
		case resp := <-call.Result():
			return answer(resp)
		case <-c.events.ready:
			for _, ev := range c.events.take() {
				if !writeEvent(ev) {
					call.Cancel("client stream lost")
					return "disconnected", false
				}
			}
		case <-c.detached:
			select {
			case resp := <-call.Result(): // the answer came with the let-go: it is not lost
				return answer(resp)
			default:
			}
			call.Cancel("the worker let go of the request")
			switch {
			case g.closing.Load(): // the gateway stops (drain.go): never a 503, the call may have run
				if stream != nil {
					writeEvent(stoppedCall(msg.ID).Encode())
				} else {
					writeBody(w, http.StatusOK, stoppedCall(msg.ID).Encode())
				}
			default: // an error for the call's id, never a 503: the call reached the worker and may have run
				gone := jsonrpc.ErrorResponse(msg.ID, jsonrpc.CodeInternalError, "the worker is gone", map[string]any{"kind": "workerExit"}).Encode()
				if stream != nil {
					writeEvent(gone)
				} else {
					writeBody(w, http.StatusOK, gone)
				}
			}
			return "error", false
		case <-r.Context().Done():
			call.Cancel("client closed the request's stream")
			return "cancelled", false
		case <-timeout:
			call.Cancel("request timeout")
			resp := jsonrpc.ErrorResponse(msg.ID, jsonrpc.CodeRequestTimeout, "request timed out", map[string]any{"kind": "timeout"})
			if stream != nil {
				writeEvent(resp.Encode())
			} else {
				writeBody(w, http.StatusOK, resp.Encode())
			}
			return "timeout", false
		}
	}
}

// gatherRequests collects the worker's requests sent together with first: those already
// queued and those that follow within bridgeGather.
func gatherRequests(first *jsonrpc.Message, more <-chan *jsonrpc.Message) map[string]*jsonrpc.Message {
	out := map[string]*jsonrpc.Message{workerRequestKey(first): first}
	t := time.NewTimer(bridgeGather)
	defer t.Stop()
	for {
		select {
		case req := <-more:
			out[workerRequestKey(req)] = req
		case <-t.C:
			return out
		}
	}
}

// modernAnswer maps the worker's answer to the modern era: a tools/list filtered by the
// policy (fails closed), resultType and the cache fields added.
func (g *Gateway) modernAnswer(method string, access policy.Access, resp *jsonrpc.Message) (*jsonrpc.Message, string) {
	if resp.Error != nil {
		return resp, "error"
	}
	result := resp.Result
	if method == "tools/list" {
		filtered, _, err := g.opts.Policy.FilterToolsList(access, result)
		if err != nil {
			g.log.Warn("worker's tools/list answer is malformed; refused", "error", err)
			return jsonrpc.ErrorResponse(resp.ID, jsonrpc.CodeInternalError, "the worker's tool list is malformed", nil), "error"
		}
		result = filtered
	}
	mapped, err := modernResult(method, result)
	if err != nil {
		return jsonrpc.ErrorResponse(resp.ID, jsonrpc.CodeInternalError, "the worker's answer is malformed", nil), "error"
	}
	out := *resp
	out.Result = mapped
	outcome := "ok"
	if method == "tools/call" && isToolError(mapped) {
		outcome = "tool_error"
	}
	return &out, outcome
}

// errorCode is an error answer's code, 0 when unreadable.
func errorCode(m *jsonrpc.Message) int64 {
	var e struct {
		Code int64 `json:"code"`
	}
	_ = json.Unmarshal(m.Error, &e)
	return e.Code
}

// modernSSE writes a modern call's stream: no event ids and no retry field, since
// 2026-07-28 has no resumption; every write is bounded by sseWriteTimeout.
type modernSSE struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newModernSSE(w http.ResponseWriter) *modernSSE {
	return &modernSSE{w: w, rc: http.NewResponseController(w)}
}

func (s *modernSSE) start() error {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	return s.flush()
}

// event writes one message; a line break in it becomes several data lines, so it can never
// end the event early (the worker's JSON is single-line, but gemgate does not rely on it).
func (s *modernSSE) event(msg []byte) error {
	var buf bytes.Buffer
	buf.WriteString("event: message\n")
	for _, line := range bytes.FieldsFunc(msg, func(r rune) bool { return r == '\n' || r == '\r' }) {
		buf.WriteString("data: ")
		buf.Write(line)
		buf.WriteByte('\n')
	}
	buf.WriteByte('\n')
	return s.write(buf.Bytes())
}

// comment writes an SSE comment, which clients skip: a keepalive.
func (s *modernSSE) comment(text string) error { return s.write([]byte(": " + text + "\n\n")) }

// write writes b and flushes it (writeFlushed).
func (s *modernSSE) write(b []byte) error { return writeFlushed(s.rc, s.w, b, nil) }

func (s *modernSSE) flush() error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	return s.rc.Flush()
}
