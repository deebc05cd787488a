package pool

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/worker"
)

// Request is one call a caller makes.
type Request struct {
	Message *jsonrpc.Message // the client's request, its id the client's own
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
	clientID json.RawMessage
	msg      *jsonrpc.Message // as it goes to the worker
	token    json.RawMessage  // the client's progress token; nil when none
	wtoken   string           // the worker-side progress token
	after    func(ok bool)    // bookkeeping once the worker answered; under the slot's lock

	result chan *jsonrpc.Message
	once   sync.Once
	quit   chan struct{} // closed on Cancel or Abandon
	qonce  sync.Once

	mu        sync.Mutex
	proc      *worker.Call // set once written
	queued    bool
	cancelled bool
	reason    string
}

// Result delivers the answer with the caller's id; a worker that dies delivers an error.
func (c *Call) Result() <-chan *jsonrpc.Message { return c.result }

// Tag is the caller's handle given in Request.Tag.
func (c *Call) Tag() any { return c.tag }

func (c *Call) finish(m *jsonrpc.Message) {
	c.once.Do(func() { c.result <- m })
}

// Cancel withdraws the call: from its queue, or at the worker with the worker's own id. Only
// this call is touched.
func (c *Call) Cancel(reason string) { c.withdraw(reason, true) }

// Abandon drops the call without telling the worker.
func (c *Call) Abandon() { c.withdraw("", false) }

func (c *Call) withdraw(reason string, tell bool) {
	c.mu.Lock()
	if c.cancelled {
		c.mu.Unlock()
		return
	}
	c.cancelled, c.reason = true, reason
	pc := c.proc
	c.mu.Unlock()
	if pc != nil {
		if tell {
			pc.Cancel(reason)
		} else {
			pc.Abandon()
		}
		c.qonce.Do(func() { close(c.quit) })
		return
	}
	// Still queued (or on its way to the worker: send sees cancelled and does not write it).
	c.s.mu.Lock()
	removed := c.w.queue.remove(c)
	c.s.mu.Unlock()
	if removed {
		c.s.p.opts.Metrics.queued(-1)
		c.s.done(c, false)
	}
}

func sessionEnded(c *Call) *jsonrpc.Message {
	return jsonrpc.ErrorResponse(c.clientID, jsonrpc.CodeInternalError, "the session ended before the worker answered", map[string]any{"kind": "sessionEnded"})
}

func workerGone(c *Call) *jsonrpc.Message {
	return jsonrpc.ErrorResponse(c.clientID, jsonrpc.CodeInternalError, "worker exited before answering", map[string]any{"kind": "workerExit"})
}

// enqueueOrRunLocked takes a call in: run now, or wait its turn with worker_concurrency.
// It reports whether the caller must send it now.
func (s *slot) enqueueOrRunLocked(c *Call) bool {
	w := c.w
	if n := s.p.opts.Concurrency; n > 0 && len(w.calls) >= n {
		c.queued = true
		w.queue.push(c)
		s.p.opts.Metrics.queued(1)
		return false
	}
	w.calls[c] = struct{}{}
	return true
}

// send writes a call to its worker and relays the answer when it comes.
func (s *slot) send(ctx context.Context, c *Call) error {
	c.mu.Lock()
	if c.cancelled {
		c.mu.Unlock()
		s.done(c, false)
		return nil
	}
	c.mu.Unlock()
	pc, err := c.w.proc.SendContext(ctx, c.msg)
	if err != nil {
		s.done(c, false)
		return err
	}
	c.mu.Lock()
	c.proc = pc
	cancelled, reason := c.cancelled, c.reason
	c.mu.Unlock()
	if cancelled { // a cancel that came while the request was being written
		pc.Cancel(reason)
		c.qonce.Do(func() { close(c.quit) })
	}
	go func() {
		select {
		case resp := <-pc.Result():
			s.done(c, resp.Error == nil)
			c.finish(resp)
		case <-c.quit:
			s.done(c, false)
		}
	}()
	return nil
}

// done frees a call's place: its progress token, its turn (the next queued call runs), and
// the worker's idleness clock.
func (s *slot) done(c *Call, ok bool) {
	s.mu.Lock()
	w := c.w
	delete(w.calls, c)
	if c.wtoken != "" && w.progress[c.wtoken] == c {
		delete(w.progress, c.wtoken)
	}
	if c.after != nil {
		c.after(ok)
		c.after = nil
	}
	var next *Call
	if n := s.p.opts.Concurrency; n > 0 && len(w.calls) < n && s.w == w {
		if next = w.queue.pop(); next != nil {
			next.queued = false
			w.calls[next] = struct{}{}
		}
	}
	stop, drop := s.settleLocked()
	s.mu.Unlock()
	if next != nil {
		s.p.opts.Metrics.queued(-1)
		if err := s.send(context.Background(), next); err != nil {
			next.finish(workerGone(next))
		}
	}
	if drop {
		s.p.forget(s)
	}
	if stop != nil {
		stop.proc.Stop()
	}
}

// rewriteProgress gives a request a worker-unique progress token: two callers that both use
// token 1 must each get only their own progress.
func rewriteProgress(params json.RawMessage, token string) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(p["_meta"], &meta); err != nil {
		return nil, err
	}
	meta["progressToken"] = json.RawMessage(strconv.Quote(token))
	var err error
	if p["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

// fairQueue holds calls waiting for a turn, one line per caller, served round robin: a caller
// with a hundred calls queued does not hold up another's one.
type fairQueue struct {
	lines map[*Member][]*Call
	ring  []*Member
	next  int
	n     int
}

func (q *fairQueue) len() int { return q.n }

func (q *fairQueue) push(c *Call) {
	if q.lines == nil {
		q.lines = map[*Member][]*Call{}
	}
	if len(q.lines[c.m]) == 0 {
		q.ring = append(q.ring, c.m)
	}
	q.lines[c.m] = append(q.lines[c.m], c)
	q.n++
}

// pop takes the head of the next caller's line in turn.
func (q *fairQueue) pop() *Call {
	if q.n == 0 {
		return nil
	}
	if q.next >= len(q.ring) {
		q.next = 0
	}
	m := q.ring[q.next]
	line := q.lines[m]
	c := line[0]
	if len(line) == 1 {
		delete(q.lines, m)
		q.ring = append(q.ring[:q.next], q.ring[q.next+1:]...)
	} else {
		q.lines[m] = line[1:]
		q.next++
	}
	q.n--
	return c
}

func (q *fairQueue) remove(c *Call) bool {
	line := q.lines[c.m]
	for i, x := range line {
		if x != c {
			continue
		}
		line = append(line[:i:i], line[i+1:]...)
		if len(line) == 0 {
			delete(q.lines, c.m)
			for j, m := range q.ring {
				if m == c.m {
					q.ring = append(q.ring[:j], q.ring[j+1:]...)
					if q.next > j {
						q.next--
					}
					break
				}
			}
		} else {
			q.lines[c.m] = line
		}
		q.n--
		return true
	}
	return false
}

// removeMember takes out every call of a caller.
func (q *fairQueue) removeMember(m *Member) []*Call {
	line := q.lines[m]
	for _, c := range slicesClone(line) {
		q.remove(c)
	}
	return line
}

func (q *fairQueue) drain() []*Call {
	var out []*Call
	for c := q.pop(); c != nil; c = q.pop() {
		out = append(out, c)
	}
	return out
}

func slicesClone(cs []*Call) []*Call { return append([]*Call(nil), cs...) }
