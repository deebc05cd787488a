package pool

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/worker"
)

// Member is one caller's attachment to a key's worker.
type Member struct {
	c                   Caller
	params              json.RawMessage // the client's initialize params
	caps                Capabilities
	attachedSessionless bool // attached to a sessionless worker (Attach.Sessionless): fixed for its life

	s atomic.Pointer[slot] // nil once detached
	// left is the slot a step-up moved it from (Move): its calls there go on, and so do
	// their questions to it, which it may still answer (request) until it detaches.
	left atomic.Pointer[slot]

	// inFlight counts the member's calls at any worker (a moved member's may still run on
	// the old one). It changes only under that worker's slot lock, so a detach that reads 0
	// under its slot lock need not scan the worker's calls.
	inFlight atomic.Int32
	// ending answers its calls when it detaches before their worker did (EndCallsWith).
	ending atomic.Pointer[func(id json.RawMessage) *jsonrpc.Message]
}

// EndCallsWith sets the answer m's calls get when m detaches before their worker answered,
// in place of "the session ended": the gateway's stop names itself, as it does to a
// 2026-07-28 call.
func (m *Member) EndCallsWith(answer func(id json.RawMessage) *jsonrpc.Message) {
	m.ending.Store(&answer)
}

// endAnswer is what c, m's call, gets when m detaches before the worker answered it.
func (m *Member) endAnswer(c *Call) *jsonrpc.Message {
	if f := m.ending.Load(); f != nil {
		return (*f)(c.out.ID)
	}
	return sessionEnded(c)
}

// current is the member's slot and its running worker, if one runs.
func (m *Member) current() (*slot, *wrk) {
	s := m.s.Load()
	if s == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s, s.w
}

// Call sends a request to the caller's worker, starting one if none runs (the first call
// after a worker died), after the on_token_expiry policy has had its say.
func (m *Member) Call(ctx context.Context, req Request) (*Call, error) {
	c, err := m.call(ctx, req)
	if errors.Is(err, worker.ErrExited) {
		// The worker died between being chosen and written to: once more, on its successor.
		c, err = m.call(ctx, req)
	}
	return c, err
}

func (m *Member) call(ctx context.Context, req Request) (*Call, error) {
	s := m.s.Load()
	if s == nil {
		return nil, ErrDetached
	}
	if err := s.applyExpiry(req.Identity); err != nil {
		return nil, err
	}
	w, err := s.acquire(ctx, req.Identity, m.params, m)
	if errors.Is(err, errSlotGone) {
		return nil, ErrDetached
	}
	if err != nil {
		return nil, err
	}
	c := &Call{s: s, w: w, m: m, tag: req.Tag, readOnly: req.Identity.ReadOnly, result: make(chan *jsonrpc.Message, 1)}
	c.out = *req.Message
	s.mu.Lock()
	if _, in := s.members[m]; !in {
		s.mu.Unlock()
		return nil, ErrDetached
	}
	if len(w.calls)+w.queue.len() >= s.p.opts.MaxCallsPerWorker {
		s.mu.Unlock()
		return nil, ErrWorkerBusy
	}
	if local := s.shareLocked(c); local != nil {
		s.mu.Unlock()
		c.finish(local)
		return c, nil
	}
	if len(req.ProgressToken) > 0 && string(req.ProgressToken) != "null" {
		w.nextTok++
		tok := "gemgate-p" + strconv.FormatUint(w.nextTok, 10)
		params, err := rewriteProgress(c.out.Params, tok)
		if err == nil {
			c.out.Params, c.token, c.wtoken = params, req.ProgressToken, tok
			w.progress[tok] = c
		}
	}
	now := s.enqueueOrRunLocked(ctx, c)
	s.mu.Unlock()
	if !now {
		return c, nil
	}
	if err := s.send(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// applyExpiry applies on_token_expiry before a call reaches the worker. With restart, an
// idle worker whose credential expired is replaced; with end, it is stopped and its callers
// let go. Only a call of the slot's access mode may restart it, since the fresh credential
// comes from its token. A narrowed call gets ErrAccessMismatch instead of running on the
// expired login, which would otherwise stay alive for good.
func (s *slot) applyExpiry(id Identity) error {
	policy := s.p.opts.OnTokenExpiry
	if policy == ExpiryKeep {
		return nil
	}
	s.mu.Lock()
	w := s.w
	if w == nil || w.credExpiry.IsZero() || !s.p.opts.Now().After(w.credExpiry) {
		s.mu.Unlock()
		return nil
	}
	if err := s.refuseStart(id); policy == ExpiryRestart && err != nil {
		s.mu.Unlock()
		return err
	}
	if policy == ExpiryRestart {
		if len(w.calls) > 0 || w.queue.len() > 0 {
			s.mu.Unlock()
			return nil // never pull a worker from under a call; the next request tries again
		}
		s.stopLocked()
		s.mu.Unlock()
		w.log.Info("worker credential expired; restarting it with a fresh one (on_token_expiry=restart); its unsaved state is gone")
		w.proc.Stop()
		return nil
	}
	s.stopLocked()
	let := s.takeMembersLocked()
	s.gone = true
	s.mu.Unlock()
	s.p.forget(s)
	w.log.Info("worker credential expired; ending the worker and its sessions (on_token_expiry=end)")
	w.proc.Stop()
	for _, m := range let {
		m.letGo(ReasonTokenExpired)
	}
	return ErrDetached
}

// Notify passes a client notification on. With worker_per: user, gemgate drops the client's
// notifications/initialized (it sent its own) and roots/list_changed (the worker was told of
// no roots).
func (m *Member) Notify(msg *jsonrpc.Message) error {
	s, w := m.current()
	if w == nil {
		return nil // no worker runs: there is nobody to tell
	}
	if (msg.Method == "notifications/initialized" || msg.Method == "notifications/roots/list_changed") && !s.p.PerSession() {
		return nil
	}
	return w.proc.Write(context.Background(), msg)
}

// Answered is what the pool knows of a worker request a client answered, for its audit line.
type Answered struct {
	Method         string // the worker's method, or "other" for one MCP does not name (auditMethod)
	WorkerReadOnly bool   // the access mode of the worker that asked
}

// Answer passes the client's answer to a worker request on, with the worker's id restored.
// Only the caller the request went to may answer (else ErrNoSuchRequest), and a read-only
// token never answers a read-write worker (ErrNotEntitled; the request stays open).
func (m *Member) Answer(msg *jsonrpc.Message, readOnly bool) (Answered, error) {
	var info Answered
	entitled := false // the one rule: a read-only token answers only a read-only worker
	out := *msg
	w := m.request(msg.ID, func(s *slot, w *wrk, pr pendingRequest) bool {
		info = Answered{Method: auditMethod(pr.method), WorkerReadOnly: s.key.ReadOnly}
		out.ID = pr.workerID
		entitled = s.key.ReadOnly || !readOnly
		return entitled
	})
	switch {
	case w == nil:
		return info, ErrNoSuchRequest
	case !entitled:
		return info, ErrNotEntitled
	}
	return info, w.proc.Write(context.Background(), &out)
}

// Asks reports whether the worker's request id (gemgate's for it) is open and m's to answer:
// not answered, refused or withdrawn by the worker since.
func (m *Member) Asks(id json.RawMessage) bool {
	return m.request(id, func(*slot, *wrk, pendingRequest) bool { return false }) != nil
}

// request hands m's unanswered worker request id to then under the slot lock, and takes it
// out if then returns true. It returns the worker, or nil if there is no such request. The
// request may be at the worker m left on a step-up, whose calls went on.
func (m *Member) request(id json.RawMessage, then func(*slot, *wrk, pendingRequest) bool) *wrk {
	var gid string
	if json.Unmarshal(id, &gid) != nil {
		return nil
	}
	for _, s := range [2]*slot{m.s.Load(), m.left.Load()} {
		if s == nil {
			continue
		}
		if w := s.request(m, gid, then); w != nil {
			return w
		}
	}
	return nil
}

func (s *slot) request(m *Member, gid string, then func(*slot, *wrk, pendingRequest) bool) *wrk {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.w
	if w == nil {
		return nil
	}
	pr, ok := w.requests[gid]
	if !ok || pr.m != m {
		return nil
	}
	if then(s, w, pr) {
		delete(w.requests, gid)
	}
	return w
}

// Decline gives a worker request delivered to the caller the safe refusal (unanswerable),
// for a caller with nobody to ask. It reports whether the request was open and the caller's.
func (m *Member) Decline(id json.RawMessage) bool {
	return m.request(id, func(s *slot, w *wrk, pr pendingRequest) bool {
		answer, _ := unanswerable(&jsonrpc.Message{ID: pr.workerID, Method: pr.method})
		s.refuseLocked(w, answer)
		return true
	}) != nil
}

// Unreachable gives a worker request delivered to the caller the safe refusal (unanswerable)
// when the caller finds it cannot put it to its client (why), audited as gemgate's answer, as
// one the pool finds nobody to ask for. It reports whether the request was open and the
// caller's.
func (m *Member) Unreachable(id json.RawMessage, why string) bool {
	var audit func() // once the slot's lock is let go
	m.request(id, func(s *slot, w *wrk, pr pendingRequest) bool {
		named := s.refuseUnaskedLocked(w, &jsonrpc.Message{ID: pr.workerID, Method: pr.method})
		audit = func() { s.auditUnasked(w, pr.method, named, why) }
		return true
	})
	if audit == nil {
		return false
	}
	audit()
	return true
}

// Refuse answers a worker request delivered to the caller with an error. It never blocks:
// the answer joins the bounded queue of refuseLocked. It reports whether the request was
// open and the caller's.
func (m *Member) Refuse(id json.RawMessage, why string) bool {
	return m.request(id, func(s *slot, w *wrk, pr pendingRequest) bool {
		s.refuseLocked(w, jsonrpc.ErrorResponse(pr.workerID, jsonrpc.CodeInternalError, why, nil))
		return true
	}) != nil
}

// Detach lets the caller go: its queued calls are dropped, its subscriptions released, its
// worker requests answered with an error; the worker lives on until idle (worker_per: user)
// or stops now (worker_per: session).
func (m *Member) Detach() {
	if s := m.s.Swap(nil); s != nil {
		s.detach(m, false)
	}
	if s := m.left.Swap(nil); s != nil {
		// What m kept at the worker it left on a step-up ends with it too: its calls, its
		// questions there, the slot settled. m is no longer among that slot's members.
		s.detach(m, false)
	}
}

// detach takes m out of the slot, ending its calls there. With keepCalls (a step-up move),
// the calls go on and answer as before, since the session goes on, and detach returns what
// m held here to take along (heldLocked).
func (s *slot) detach(m *Member, keepCalls bool) (uris []string, level int) {
	level = -1
	s.mu.Lock()
	delete(s.members, m)
	var dropped, running []*Call
	var unsub []string
	var orphaned []json.RawMessage // the worker's ids of m's open requests
	w := s.w
	if w != nil {
		if !keepCalls && m.inFlight.Load() > 0 {
			for c := range w.calls {
				if c.m == m {
					running = append(running, c)
				}
			}
		}
		if keepCalls {
			uris, level = w.heldLocked(m, false)
		} else {
			dropped = w.queue.removeMember(m)
		}
		unsub = w.releaseLocked(m)
		for _, c := range dropped {
			// Never written: its bookkeeping ends here (a subscribe's count in flight), and
			// a reconcile it held back (unwrittenSubLocked) runs.
			if c.after != nil {
				c.after(nil)
				c.after = nil
			}
			if c.subFwd {
				unsub = append(unsub, c.subURI)
			}
		}
		for gid, pr := range w.requests {
			if pr.m == m && !keepCalls { // a step-up's calls go on, and may be answered (request)
				orphaned = append(orphaned, pr.workerID)
				delete(w.requests, gid)
			}
		}
	}
	if prev := s.prev; prev != nil {
		// A worker gone, its successor not started: what m held there would carry over.
		if w == nil && keepCalls {
			uris, level = prev.heldLocked(m, true)
		}
		prev.releaseLocked(m) // nothing to tell a worker that is gone
	}
	stop, drop := s.settleLocked()
	if stop != w { // a worker that stops now needs no answers
		for _, id := range orphaned {
			s.refuseLocked(w, sessionEndedRefusal(id))
		}
	}
	s.mu.Unlock()
	s.p.opts.Metrics.queued(-len(dropped))
	// The session's calls end with it: the worker is told to cancel each (a shared worker
	// must not work for nobody), and any waiter gets an error with its own id.
	for _, c := range append(running, dropped...) {
		c.finish(m.endAnswer(c))
	}
	if len(running) > 0 {
		go func() {
			for _, c := range running {
				c.Cancel("the session ended")
			}
		}()
	}
	if w != nil && stop != w && len(unsub) > 0 {
		// Off the detaching goroutine, since a write may wait on the worker; most detaches
		// leave nothing to unsubscribe: no goroutine for them.
		go func() {
			for _, uri := range unsub {
				w.reconcile(s, uri) // not if another caller subscribed since
			}
		}()
	}
	s.settle(leftToDo{stop: stop, drop: drop}) // worker_per: session: the worker goes with its session
	return uris, level
}

// letGo detaches a member on the pool's initiative and tells its caller why.
func (m *Member) letGo(reason string) {
	if m.s.Swap(nil) != nil {
		m.c.Detached(reason)
	}
}

// Move attaches the caller to the worker of id instead (step-up: a read-only session that
// now holds a read-write token), starting that worker if need be. Nothing changes when id
// maps to the same worker.
func (m *Member) Move(ctx context.Context, id Identity) error {
	old := m.s.Load()
	if old == nil {
		return ErrDetached
	}
	key := old.p.keyFor(id, old.key.Sessionless)
	if key == old.key {
		return nil
	}
	var uris []string
	level, moved := -1, false
	for {
		s, w, err := old.p.workerFor(ctx, key, id, m.params)
		if err != nil {
			return err
		}
		if m.s.Load() != old {
			return ErrDetached
		}
		if !moved {
			// Its subscriptions and logging level go with it: the session goes on.
			m.left.Store(old)
			uris, level = old.detach(m, true)
			moved = true
		}
		attached, letGo := s.attachFrom(m, w, old, uris, level)
		if letGo {
			return ErrDetached
		}
		if !attached {
			continue
		}
		w.tellCarried(s, uris)
		w.log.Info("session moved to this worker (step-up)")
		return nil
	}
}

// Ask sends a request of gemgate's own to the current worker, outside the caller's calls,
// and waits for its result; ok is false on an error answer, no worker, or ctx ending. With
// start, the worker is had as Call has it for id: a worker started when none runs, or when
// the one there is ending (the first request after a worker died).
func (m *Member) Ask(ctx context.Context, start *Identity, method string, params json.RawMessage) (json.RawMessage, bool) {
	s, w := m.current()
	if s != nil && start != nil {
		var err error
		if w, err = s.acquire(ctx, *start, m.params, m); err != nil {
			return nil, false
		}
	}
	if w == nil {
		return nil, false
	}
	params = s.ownParams(params)
	call, err := w.proc.Send(ctx, &jsonrpc.Message{ID: json.RawMessage(`0`), Method: method, Params: params}, nil)
	if err != nil {
		return nil, false
	}
	select {
	case resp := <-call.Result():
		return resp.Result, resp.Error == nil && resp.Result != nil
	case <-ctx.Done():
		call.Cancel("gemgate stopped waiting for " + method)
		return nil, false
	}
}

// WorkerID is the short id of the caller's current worker, "" when none runs.
func (m *Member) WorkerID() string {
	if _, w := m.current(); w != nil {
		return w.id
	}
	return ""
}

// RunningWorkerID is WorkerID, or "" while the worker's process is ending: it exited, or is
// being stopped, before the pool has let it go. What its answers said (a session's tool hints)
// is then of a worker the caller's next request will not reach.
func (m *Member) RunningWorkerID() string {
	if _, w := m.current(); w != nil && !w.proc.Closing() {
		return w.id
	}
	return ""
}

// WorkerPid is the process id of the caller's current worker, 0 when none runs.
func (m *Member) WorkerPid() int {
	if _, w := m.current(); w != nil {
		return w.proc.Pid()
	}
	return 0
}

// FirstTime reports true once per worker for a topic: for log lines said once per worker.
func (m *Member) FirstTime(topic string) bool {
	s := m.s.Load()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil || s.w.once[topic] {
		return false
	}
	s.w.once[topic] = true
	return true
}

// auditMethod is a worker request's method for the audit line: a known MCP client method, or
// "other", since a worker's text could carry anything, its credential too.
func auditMethod(method string) string {
	switch method {
	case "elicitation/create", "sampling/createMessage", "roots/list", "ping":
		return method
	}
	return "other"
}
