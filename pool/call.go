package pool

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/telemetry"
	"github.com/gemgate/gemgate/worker"
)

// Request is one call a caller makes.
type Request struct {
	// Message is the client's request, its id the client's own. Its id is kept until the worker
	// answers, a call given up on too: it should not be a slice of a larger buffer (the
	// gateway's is a copy of its own); of the rest, nothing is kept past the call.
	Message *jsonrpc.Message
	// ProgressToken is params._meta.progressToken as the gateway read it strictly; nil when
	// absent. It is replaced by a worker-unique token on the way in and restored on the way out.
	ProgressToken json.RawMessage
	// Identity is the current request's: a worker started for this call is started with it.
	Identity Identity
	// Tag is the caller's own handle for the call, handed back with Delivery.Call.
	Tag any
}

// Call is one call on its way to a worker or at it.
type Call struct {
	s        *slot
	w        *wrk
	m        *Member
	tag      any
	out      jsonrpc.Message               // the client's message, its id the client's own, copied to be changed
	token    json.RawMessage               // the client's progress token; nil when none
	wtoken   string                        // the worker-side progress token
	after    func(answer *jsonrpc.Message) // bookkeeping once the call ends (nil: no answer); under the slot's lock
	subURI   string                        // a forwarded resources/subscribe or unsubscribe: its URI
	subFwd   bool                          // it is one
	readOnly bool                          // made with read-only access (Request.Identity)
	written  bool                          // its write to the worker began; under the slot's lock
	waiting  bool                          // parked for its client's input (Waiting); under the slot's lock

	result chan *jsonrpc.Message
	once   sync.Once

	// Under the slot's lock, as the flags above.
	proc      *worker.Call // set once written
	cancelled bool
	reason    string

	// queued is the span of its wait for a turn under worker_concurrency (nil: it did not
	// wait, or is not traced); set under the slot's lock when queued, ended when it is sent
	// or finished.
	queued trace.Span
}

// Result delivers the answer with the caller's id; a worker that dies delivers an error.
func (c *Call) Result() <-chan *jsonrpc.Message { return c.result }

// Tag is the caller's handle given in Request.Tag.
func (c *Call) Tag() any { return c.tag }

// Waiting marks the call as parked for its client's input (on) or taken up again: while it
// waits, the worker's requests are not taken for its own (askerLocked). A legacy worker's
// call that waits for the answers to its questions asks nothing more meanwhile, and a call
// parked until its client's retry must not make every other call's questions ambiguous.
func (c *Call) Waiting(on bool) {
	c.s.mu.Lock()
	c.waiting = on
	c.s.mu.Unlock()
}

// SetProgressToken sets the client's progress token the worker's progress on the call is
// delivered under; nil (or null) drops it. A 2026-07-28 call parked for its client's input
// has no request to report to, and the retry that resumes it is a request of its own, with its
// own token or none. A call made without a token has none at the worker: it stays without.
func (c *Call) SetProgressToken(token json.RawMessage) {
	if string(token) == "null" {
		token = nil
	}
	c.s.mu.Lock()
	c.token = token
	c.s.mu.Unlock()
}

// WorkerID is the id of the worker the call was made at (Member.WorkerID's then).
func (c *Call) WorkerID() string { return c.w.id }

func (c *Call) finish(m *jsonrpc.Message) {
	c.once.Do(func() {
		c.endQueued()
		c.result <- m
	})
}

// endQueued ends the span of the call's wait for its turn, if it waited; a second end does nothing.
func (c *Call) endQueued() {
	if c.queued != nil {
		c.queued.End()
	}
}

// Cancel withdraws the call: from its queue, or at the worker, which is told
// (notifications/cancelled with the worker's own id). Only this call is touched.
func (c *Call) Cancel(reason string) {
	c.s.mu.Lock()
	if c.cancelled {
		c.s.mu.Unlock()
		return
	}
	c.cancelled, c.reason = true, reason
	pc := c.proc
	// Still queued, or on its way to the worker: send sees cancelled and does not write it,
	// or abandons it once written.
	removed := pc == nil && c.w.queue.remove(c)
	c.s.mu.Unlock()
	if pc != nil {
		c.s.abandon(c, pc, reason)
		return
	}
	if removed {
		c.s.p.opts.Metrics.queued(-1)
		c.s.done(c)
	}
}

func sessionEnded(c *Call) *jsonrpc.Message {
	return jsonrpc.ErrorResponse(c.out.ID, jsonrpc.CodeInternalError, "the session ended before the worker answered", map[string]any{"kind": "sessionEnded"})
}

func workerGone(c *Call) *jsonrpc.Message {
	return jsonrpc.ErrorResponse(c.out.ID, jsonrpc.CodeInternalError, "worker exited before answering", map[string]any{"kind": "workerExit"})
}

// enqueueOrRunLocked takes a call in: run now, or wait its turn with worker_concurrency.
// It reports whether the caller must send it now.
func (s *slot) enqueueOrRunLocked(ctx context.Context, c *Call) bool {
	w := c.w
	if n := s.p.opts.Concurrency; n > 0 && len(w.calls) >= n {
		if trace.SpanFromContext(ctx).IsRecording() {
			_, c.queued = telemetry.Step(ctx, "gemgate.worker.queue", trace.SpanKindInternal,
				attribute.Int("gemgate.worker.concurrency", n))
		}
		w.queue.push(c)
		s.p.opts.Metrics.queued(1)
		return false
	}
	w.calls[c] = struct{}{}
	c.m.inFlight.Add(1)
	return true
}

// send writes a call to its worker and relays the answer when it comes.
func (s *slot) send(ctx context.Context, c *Call) error {
	c.endQueued()
	// Once written is set, a worker request may belong to this call (askerLocked): anything
	// the worker sent earlier was read before this line was written. A forwarded
	// subscription change sets it when its write begins (beginSubWrite).
	s.mu.Lock()
	cancelled := c.cancelled
	c.written = !cancelled && !c.subFwd
	s.mu.Unlock()
	if cancelled {
		s.done(c) // a subscription change decided and never written is reconciled there
		return nil
	}
	var endSubWrite func(written bool)
	if c.subFwd {
		endSubWrite = s.beginSubWrite(c)
	}
	pc, err := c.w.proc.Send(ctx, &c.out, (*answerRelay)(c))
	if endSubWrite != nil {
		endSubWrite(err == nil)
	}
	if err != nil {
		s.done(c)
		return err
	}
	// Another caller's change to the URI may have been written just before this line, or be
	// decided already and counted: make the worker's state the count's.
	s.reconcileSub(c)
	s.mu.Lock()
	c.proc = pc
	cancelled, reason := c.cancelled, c.reason
	s.mu.Unlock()
	if cancelled { // a cancel that came while the request was being written
		s.abandon(c, pc, reason)
	}
	return nil
}

// abandon gives up a call its caller no longer waits for, freeing its place, and tells the
// worker (notifications/cancelled). The worker may ignore the cancel and still ask the client
// something, so the call stays counted (keepAbandonedLocked) until the worker answers it or
// ends.
func (s *slot) abandon(c *Call, pc *worker.Call, reason string) {
	s.mu.Lock()
	w := c.w
	if _, ok := w.calls[c]; !ok {
		s.mu.Unlock()
		return
	}
	left := s.releaseLocked(c, nil)
	w.keepAbandonedLocked(c, pc)
	s.mu.Unlock()
	// The cancellation is written before this returns, so that what the caller sends next
	// (the liveness ping after a timeout) comes after it (TestRequestTimeoutEscalation).
	pc.TellCancelled(reason)
	go func() {
		s.settle(left)
		s.reconcileSub(c)
	}()
}

// answerRelay is a call as its worker sees it: the recipient of its answer.
type answerRelay Call

func (r *answerRelay) Deliver(resp *jsonrpc.Message) {
	c := (*Call)(r)
	c.s.answered(c, resp)
}

// answered relays a worker's answer, or the error its end gave the call. It runs on the
// worker's reader or waiter, which must not write to the worker or stop it (each would wait
// on itself): when freeing the place means either, both steps go to a goroutine, in order.
func (s *slot) answered(c *Call, resp *jsonrpc.Message) {
	left := s.release(c, resp)
	if left.next == nil && left.stop == nil && !left.drop && !c.subFwd {
		if !left.givenUp {
			c.finish(resp)
		}
		return
	}
	go func() {
		s.settle(left)
		if !left.givenUp {
			c.finish(resp)
		}
		s.reconcileSub(c) // a write to the worker: not on its reader
		if c.subFwd && resp.Error != nil && c.out.Method == "resources/subscribe" {
			c.m.unfollowSub(s, c.subURI) // refused after its caller moved
		}
	}()
}

// done frees the place of a call given up unanswered, and reconciles a subscription it
// carried.
func (s *slot) done(c *Call) {
	s.settle(s.release(c, nil))
	s.reconcileSub(c)
}

// leftToDo is what freeing a call's place leaves to do once the slot is unlocked.
type leftToDo struct {
	next *Call // the queued call whose turn it is now
	drop bool  // the slot leaves the pool
	stop *wrk  // the worker to stop
	// givenUp: the worker's late answer to an abandoned call, which nobody receives.
	givenUp bool
}

// release frees a call's place under the slot's lock, given its answer (nil when none came);
// settle does the rest.
func (s *slot) release(c *Call, answer *jsonrpc.Message) leftToDo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releaseLocked(c, answer)
}

// releaseLocked is release under the slot's lock. A call given up and kept counted
// (abandon) ends here too, once the worker answers it.
func (s *slot) releaseLocked(c *Call, answer *jsonrpc.Message) leftToDo {
	w := c.w
	if _, ok := w.calls[c]; ok {
		delete(w.calls, c)
		c.m.inFlight.Add(-1)
	}
	var left leftToDo
	if _, ok := w.abandoned[c]; ok {
		delete(w.abandoned, c)
		left.givenUp = true
		w.log.Debug("worker answered a call its client gave up; the answer is dropped")
	}
	if c.wtoken != "" && w.progress[c.wtoken] == c {
		delete(w.progress, c.wtoken)
	}
	if c.after != nil {
		c.after(answer)
		c.after = nil
	}
	if n := s.p.opts.Concurrency; n > 0 && len(w.calls) < n && s.w == w {
		if left.next = w.queue.pop(); left.next != nil {
			w.calls[left.next] = struct{}{}
			left.next.m.inFlight.Add(1)
		}
	}
	left.stop, left.drop = s.settleLocked()
	return left
}

func (s *slot) settle(left leftToDo) {
	if next := left.next; next != nil {
		s.p.opts.Metrics.queued(-1)
		if err := s.send(context.Background(), next); err != nil {
			next.finish(workerGone(next))
		}
	}
	if left.drop {
		s.p.forget(s)
	}
	if left.stop != nil {
		left.stop.proc.Stop()
	}
}

// rewriteProgress gives a request a worker-unique progress token: two callers that both use
// token 1 must each get only their own progress.
func rewriteProgress(params json.RawMessage, token string) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	meta, err := withField(p["_meta"], "progressToken", json.RawMessage(strconv.Quote(token)))
	if err != nil {
		return nil, err
	}
	p["_meta"] = meta
	return json.Marshal(p)
}

// withField is the JSON object obj with key set to value.
func withField(obj json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(obj, &fields); err != nil {
		return nil, err
	}
	fields[key] = value
	return json.Marshal(fields)
}

// fairQueue holds calls waiting for a turn, one line per caller, served round robin: a caller
// with a hundred calls queued does not hold up another's one.
type fairQueue struct {
	lines [][]*Call // one caller's calls each, never empty, in the order of their turns
	next  int       // the line whose turn it is
	n     int
}

func (q *fairQueue) len() int { return q.n }

// line is the index of m's line, -1 if m has no call queued.
func (q *fairQueue) line(m *Member) int {
	return slices.IndexFunc(q.lines, func(l []*Call) bool { return l[0].m == m })
}

func (q *fairQueue) push(c *Call) {
	if i := q.line(c.m); i >= 0 {
		q.lines[i] = append(q.lines[i], c)
	} else {
		q.lines = append(q.lines, []*Call{c})
	}
	q.n++
}

// pop takes the head of the next caller's line in turn.
func (q *fairQueue) pop() *Call {
	if q.n == 0 {
		return nil
	}
	if q.next >= len(q.lines) {
		q.next = 0
	}
	i := q.next
	c := q.lines[i][0]
	if len(q.lines[i]) > 1 {
		q.next++
	}
	q.cut(i, 0, 1)
	return c
}

func (q *fairQueue) remove(c *Call) bool {
	i := q.line(c.m)
	if i < 0 {
		return false
	}
	j := slices.Index(q.lines[i], c)
	if j < 0 {
		return false
	}
	q.cut(i, j, j+1)
	return true
}

// removeMember takes out every call of a caller.
func (q *fairQueue) removeMember(m *Member) []*Call {
	i := q.line(m)
	if i < 0 {
		return nil
	}
	line := slices.Clone(q.lines[i])
	q.cut(i, 0, len(line))
	return line
}

// cut takes calls j to k-1 out of line i; a line left empty leaves the ring.
func (q *fairQueue) cut(i, j, k int) {
	q.n -= k - j
	if q.lines[i] = slices.Delete(q.lines[i], j, k); len(q.lines[i]) > 0 {
		return
	}
	q.lines = slices.Delete(q.lines, i, i+1)
	if q.next > i {
		q.next--
	}
}

// CheckResponsive runs after the call timed out: its worker (the one the call went to, which
// a step-up may have left) must answer a ping, as it is or after an interrupt, or it is
// killed (reason unresponsive) and every call at it fails. One check runs per worker at a
// time, on its own goroutine. done ends it early only with worker_per: session, since a
// shared worker serves others.
func (c *Call) CheckResponsive(done <-chan struct{}) {
	s, w := c.s, c.w
	if !w.checking.CompareAndSwap(false, true) {
		return
	}
	if !s.p.PerSession() {
		done = nil
	}
	go func() {
		defer w.checking.Store(false)
		if !w.answersPing(done) {
			w.log.Warn("worker unresponsive after a request timeout; stopping it")
			s.mu.Lock()
			w.reason = ReasonUnresponsive
			s.mu.Unlock()
			go w.proc.Stop()
		}
	}()
}

// answersPing reports whether w answers a ping, as it is or after an interrupt; true as well
// when it ended, or done was closed, meanwhile.
func (w *wrk) answersPing(done <-chan struct{}) bool {
	for i := range 2 {
		if i > 0 {
			w.log.Warn("worker did not answer a ping after a request timeout; interrupting it")
			w.proc.Interrupt()
		}
		id := json.RawMessage(strconv.Quote("gemgate-health-" + strconv.Itoa(i)))
		c, err := w.proc.Send(context.Background(), &jsonrpc.Message{ID: id, Method: "ping"}, nil)
		if err != nil {
			return true
		}
		select {
		case <-time.After(5 * time.Second):
			c.Abandon()
		case <-c.Result():
			return true
		case <-done:
			return true
		case <-w.proc.Done():
			return true
		}
	}
	return false
}
