package pool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/worker"
)

// maxWorkerRequests bounds a worker's requests (elicitation, sampling, roots) that wait for a
// caller's answer; beyond it the worker is answered with an error at once.
const maxWorkerRequests = 64

// pendingRequest is a worker request out to one caller.
type pendingRequest struct {
	m        *Member
	call     *Call // the call it is about, nil for none: where its withdrawal goes too
	workerID json.RawMessage
	method   string // the worker's method, for the audit line of the answer
}

// ErrNotEntitled refuses a read-only token's answer to a read-write worker's request. The
// request stays open for a caller that is entitled.
var ErrNotEntitled = errors.New("a read-only token may not answer a read-write worker's request")

// ErrNoSuchRequest is an answer to a worker request that was not delivered to the caller, or
// was answered or withdrawn since.
var ErrNoSuchRequest = errors.New("no such worker request is waiting for this caller")

// asks reports whether a call of method may carry a worker's request to the client. MCP
// allows it only during tools/call, prompts/get, resources/read and completion/complete.
func asks(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read", "completion/complete":
		return true
	}
	return false
}

// maxAbandoned bounds the cancelled calls a worker has not answered yet. Past it gemgate loses
// track, and from then on no request of the worker belongs to any call, since an untracked
// call might have asked.
const maxAbandoned = 1024

// askerLocked finds the call that a request the worker sends now belongs to: the one written
// call that can ask, counting abandoned ones (then abandoned is true). With several such
// calls the request is ambiguous and belongs to none of them. Then of is their caller if they
// all share one, and nil if they are several callers' or gemgate lost track (maxAbandoned).
func (w *wrk) askerLocked() (owner *Call, abandoned, ambiguous bool, of *Member) {
	if w.lostTrack {
		return nil, false, true, nil
	}
	n, mixed := 0, false
	note := func(c *Call) {
		if n > 0 && c.m != owner.m {
			mixed = true
		}
		owner, n = c, n+1
	}
	for c := range w.calls {
		if c.written && !c.waiting && asks(c.out.Method) {
			note(c)
		}
	}
	for c := range w.abandoned {
		note(c)
		abandoned = n == 1
	}
	switch {
	case n == 0:
		return nil, false, false, nil
	case n == 1:
		return owner, abandoned, false, nil
	case mixed:
		return nil, false, true, nil
	}
	return nil, false, true, owner.m
}

// keepAbandonedLocked keeps a cancelled call that the worker still runs, so that askerLocked
// counts it until the worker answers it or ends. Only calls that can ask are kept.
func (w *wrk) keepAbandonedLocked(c *Call, pc *worker.Call) {
	if !asks(c.out.Method) {
		pc.Abandon() // it asks nothing: its answer, if any, is dropped
		return
	}
	if len(w.abandoned) >= maxAbandoned {
		if !w.lostTrack {
			w.lostTrack = true
			w.log.Warn("worker leaves too many cancelled calls unanswered; from now on none of its requests to the client is taken as a call's", "abandoned", len(w.abandoned))
		}
		pc.Abandon()
		return
	}
	if w.abandoned == nil {
		w.abandoned = map[*Call]struct{}{}
	}
	w.abandoned[c] = struct{}{}
	// It is kept to be known as nobody's, not for the client's request: its params and their
	// reading are slices of the client's body, and so is its progress token. Its id, which the
	// gateway copied (ownID), is read without the slot's lock (sessionEnded): left as it is.
	c.out.DropParams()
	c.token = bytes.Clone(c.token)
}

// onMessage routes what the worker sends on its own. It runs on the worker's reading
// goroutine: it never writes to the worker itself, and callers' Deliver must not block.
func (s *slot) onMessage(w *wrk, msg *jsonrpc.Message) {
	if msg.IsRequest() {
		s.workerRequest(w, msg)
		return
	}
	type target struct {
		m    *Member
		call *Call
	}
	var out []target
	body := msg
	s.mu.Lock()
	switch {
	case msg.Method == "notifications/progress":
		tok, ok := workerToken(msg.Params)
		if c := w.progress[tok]; ok && c != nil && c.token != nil {
			if params, err := withField(msg.Params, "progressToken", c.token); err == nil {
				restored := *msg
				restored.Params = params
				body = &restored
				out = append(out, target{c.m, c})
			}
		}
	case msg.Method == "notifications/cancelled":
		// The worker withdraws one of its requests, by its own id: only the client it went to
		// was asked, and knows it by gemgate's, where it was asked (the call's stream). Any
		// other is dropped.
		if gid, pr, ok := w.withdrawLocked(msg.Params); ok {
			if params, err := withField(msg.Params, "requestId", json.RawMessage(strconv.Quote(gid))); err == nil {
				restored := *msg
				restored.Params = params
				body = &restored
				out = append(out, target{pr.m, pr.call})
			}
		}
	case msg.Method == "notifications/message":
		level := LevelOf(msg.Params)
		for m := range s.members {
			if want, set := w.levels[m]; set && level < want {
				continue
			}
			out = append(out, target{m, w.soleCallLocked(m)})
		}
	case msg.Method == "notifications/resources/updated":
		uri, _ := paramString(msg.Params, "uri") // "" when unreadable: then it reaches no subscriber
		for m := range w.subs[uri] {
			if _, in := s.members[m]; in {
				out = append(out, target{m, nil})
			}
		}
	default: // list_changed and whatever else: every caller of this worker (one user's)
		for m := range s.members {
			out = append(out, target{m, nil})
		}
	}
	s.mu.Unlock()
	if len(out) == 0 {
		return
	}
	enc := body.Encode()
	for _, t := range out {
		t.m.c.Deliver(Delivery{Message: enc, Call: t.call})
	}
}

// withdrawLocked takes out the open request a worker's notifications/cancelled names (params
// read strictly, the id as the worker wrote it in its request): gemgate's id for it, and what
// it was.
func (w *wrk) withdrawLocked(params json.RawMessage) (gid string, pr pendingRequest, ok bool) {
	p, err := jsonrpc.ReadObject(params, "params")
	if err != nil || p.Exact("requestId", "reason") != nil {
		return "", pr, false
	}
	id, present := p.Raw("requestId")
	if !present {
		return "", pr, false
	}
	for gid, pr := range w.requests {
		if bytes.Equal(pr.workerID, id) {
			delete(w.requests, gid)
			return gid, pr, true
		}
	}
	return "", pr, false
}

// soleCallLocked is m's call at the worker if it is m's only one there.
func (w *wrk) soleCallLocked(m *Member) *Call {
	var sole *Call
	for c := range w.calls {
		if c.m == m {
			if sole != nil {
				return nil
			}
			sole = c
		}
	}
	return sole
}

// workerRequest sends a worker's request to the one caller entitled to answer it. Otherwise
// gemgate answers with the safe refusal (unanswerable) and logs why:
//
//   - A request that belongs to a call goes to that call's stream, if the caller declared the
//     capability. A read-only token is never asked for a read-write worker, and a cancelled
//     call is asked nothing.
//   - An ambiguous request goes to the session stream of the caller that owns all the
//     candidate calls. If they are several callers', nobody is asked: each could be the wrong
//     client.
//   - A request outside any call goes to the most recently active legacy session that
//     declared the capability and has a stream. A 2026-07-28 request has no stream outside
//     its own call.
func (s *slot) workerRequest(w *wrk, msg *jsonrpc.Message) {
	// The id is kept until the request is answered, and gemgate's answers quote it: a copy of
	// its own, since the message's members are slices of the worker's whole line.
	msg.ID = bytes.Clone(msg.ID)
	s.mu.Lock()
	if len(w.requests) >= maxWorkerRequests {
		w.proc.LogQuoting(slog.LevelWarn, "worker has too many requests unanswered by the clients; refused", "method", []byte(msg.Method))
		s.refuseLocked(w, jsonrpc.ErrorResponse(msg.ID, jsonrpc.CodeMethodNotFound, "too many requests to the client are unanswered", nil))
		s.mu.Unlock()
		return
	}
	var to *Member
	var call *Call
	why := ""
	switch owner, abandoned, ambiguous, of := w.askerLocked(); {
	case ambiguous && of == nil:
		why = "calls of several clients at the worker could have asked; gemgate does not guess which"
	case ambiguous:
		// All candidate calls are this caller's: its session stream may take the request,
		// but none of the calls' streams.
		if _, in := s.members[of]; in && of.caps.allows(msg.Method) && (of.c.CanTakeRequest() || s.p.PerSession()) {
			to = of
		} else {
			why = "the calls that could have asked are one client's, whose session cannot take the request now"
		}
	case owner == nil:
	case abandoned:
		why = "the call that asked was given up by its client"
	case owner.readOnly && !s.key.ReadOnly:
		why = "the call that asked was made with a read-only token, which may not answer a read-write worker"
	case owner.m.caps.allows(msg.Method):
		to, call = owner.m, owner
	}
	members := slices.Collect(maps.Keys(s.members))
	s.mu.Unlock()
	if to == nil && why == "" && s.p.PerSession() && len(members) == 1 {
		to = members[0] // its own worker: it gets the request on its stream whenever it opens one
	}
	if to == nil && why == "" {
		for _, m := range members {
			if !m.caps.allows(msg.Method) || !m.c.CanTakeRequest() {
				continue
			}
			if to == nil || m.c.LastActive().After(to.c.LastActive()) {
				to = m
			}
		}
	}
	if to == nil {
		if why == "" {
			why = "no session can answer the worker's request"
		}
		s.mu.Lock()
		named := s.refuseUnaskedLocked(w, msg)
		s.mu.Unlock()
		s.auditUnasked(w, msg.Method, named, why)
		return
	}
	s.mu.Lock()
	if s.w != w {
		s.mu.Unlock()
		return
	}
	if _, in := s.members[to]; !in && to.left.Load() != s {
		// It detached while it was chosen, after detach refused the requests it held. One
		// that left on a step-up still answers for its calls that went on here (request).
		s.refuseLocked(w, sessionEndedRefusal(msg.ID))
		s.mu.Unlock()
		return
	}
	gid := "gemgate-w" + strconv.FormatUint(s.p.nextReq.Add(1), 10)
	w.requests[gid] = pendingRequest{m: to, call: call, workerID: msg.ID, method: msg.Method}
	s.mu.Unlock()
	out := *msg
	out.ID = json.RawMessage(strconv.Quote(gid))
	to.c.Deliver(Delivery{Message: out.Encode(), Call: call, Request: true})
}

// maxRefusals bounds the answers gemgate has decided for a worker's requests and not yet
// written: they wait only while the worker does not read its input, which write_timeout ends.
const maxRefusals = 64

// refuseLocked queues gemgate's answer to a worker's request. One goroutine per worker writes
// the queue, never the reading goroutine, which must not wait on the worker's stdin. Past
// maxRefusals answers are dropped; write_timeout stops a worker that does not read.
func (s *slot) refuseLocked(w *wrk, answer *jsonrpc.Message) {
	if len(w.refusals) >= maxRefusals {
		if !w.dropped {
			w.dropped = true
			w.log.Warn("worker sends requests faster than it reads their answers; answers dropped", "queued", len(w.refusals))
		}
		return
	}
	w.refusals = append(w.refusals, answer)
	if !w.refusing {
		w.refusing = true
		go s.writeRefusals(w)
	}
}

// refuseUnaskedLocked gives a worker's request that nobody is asked the safe refusal
// (unanswerable), named by the answer it returns; the caller audits it (auditUnasked) once it
// holds no lock.
func (s *slot) refuseUnaskedLocked(w *wrk, msg *jsonrpc.Message) (named string) {
	answer, named := unanswerable(msg)
	s.refuseLocked(w, answer)
	return named
}

// auditUnasked writes the audit line of a worker's request refuseUnaskedLocked answered, as
// gemgate's answer, for why.
func (s *slot) auditUnasked(w *wrk, method, named, why string) {
	w.proc.LogQuoting(slog.LevelInfo, "audit worker request", "method", []byte(method),
		"answered_by", "gemgate", "answer", named, "reason", why, "worker_read_only", s.key.ReadOnly)
}

// writeRefusals writes the worker's queued refusals until none is left.
func (s *slot) writeRefusals(w *wrk) {
	for {
		s.mu.Lock()
		if len(w.refusals) == 0 {
			w.refusing = false
			w.refusals = nil
			s.mu.Unlock()
			return
		}
		m := w.refusals[0]
		w.refusals[0] = nil
		w.refusals = w.refusals[1:]
		s.mu.Unlock()
		_ = w.proc.Write(context.Background(), m)
	}
}

// unanswerable is gemgate's answer to a worker's request that no entitled client can take.
// It fails safe, as if the user had been asked and had not agreed: an elicitation is
// cancelled (a confirmation never shown confirms nothing), roots are none, and anything else
// is an error. named is what the audit line calls the answer.
func unanswerable(msg *jsonrpc.Message) (answer *jsonrpc.Message, named string) {
	switch msg.Method {
	case "elicitation/create":
		return &jsonrpc.Message{ID: msg.ID, Result: json.RawMessage(`{"action":"cancel"}`)}, "cancel"
	case "roots/list":
		return &jsonrpc.Message{ID: msg.ID, Result: json.RawMessage(`{"roots":[]}`)}, "no roots"
	}
	return jsonrpc.ErrorResponse(msg.ID, jsonrpc.CodeMethodNotFound, "no client session can answer "+msg.Method+" now", nil), "error"
}

// workerToken reads params.progressToken of a worker's progress notification as strictly as
// the client's was read: an ambiguous one routes nowhere.
func workerToken(params json.RawMessage) (string, bool) {
	tok, ok := paramString(params, "progressToken")
	return tok, ok && strings.HasPrefix(tok, "gemgate-p")
}

// sessionEndedRefusal answers a worker's request whose session ended before a client answered.
func sessionEndedRefusal(workerID json.RawMessage) *jsonrpc.Message {
	return jsonrpc.ErrorResponse(workerID, jsonrpc.CodeInternalError, "the session this request went to has ended", nil)
}
