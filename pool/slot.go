package pool

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/telemetry"
	"github.com/gemgate/gemgate/worker"
)

// slot is one key's place in the pool: the callers attached to it and its current worker, if
// one runs. The worker may die and be replaced; the callers stay (on_worker_exit: keep).
type slot struct {
	p   *Pool
	key Key
	// scopes and audience are the key's sets as lists (GrantList), for Member.Grant.
	scopes, audience []string

	mu       sync.Mutex
	members  map[*Member]struct{}
	w        *wrk          // nil while none runs
	starting chan struct{} // non-nil while a start is under way
	startErr error
	idle     *time.Timer
	gone     bool // out of the pool's map: a caller must find a fresh slot
	// prev is the worker last taken out of service: the subscriptions and logging levels of
	// the callers still attached carry over to the next one (carryLocked). Set, the next
	// start is a restart.
	prev *wrk
}

// wrk is one running worker and its routing state, guarded by its slot's mu.
type wrk struct {
	id          string
	proc        *worker.Process
	log         *slog.Logger
	credExpiry  time.Time
	initResult  json.RawMessage // server/discover's result for a Key.Sessionless slot
	sessionless bool            // it speaks the sessionless revision itself (discover.go)
	version     string

	calls    map[*Call]struct{} // written to the worker, not yet answered
	queue    fairQueue
	progress map[string]*Call // by the worker-side progress token
	nextTok  uint64
	requests map[string]pendingRequest // worker requests out to a caller, by gemgate's id
	// refusals are gemgate's answers to worker requests no caller takes, in order, written
	// by one goroutine at a time (refusing).
	refusals []*jsonrpc.Message
	refusing bool
	dropped  bool // a refusal was dropped (and logged) for a full queue
	// Resource subscriptions (subscribe.go): the callers counted by URI, and the URIs each
	// caller counts for; the unanswered subscribes by URI and caller (nil: reconcile's own);
	// the URIs whose last line to the worker was a subscribe, with the call that wrote it.
	// subMu orders the lines that change heard.
	subs       map[string]map[*Member]bool
	subsOf     map[*Member]int
	subPending map[string]map[*Member]int
	heard      map[string]*Call
	subMu      sync.Mutex
	levels     map[*Member]int // each caller's logging level
	level      int             // the level set at the worker; -1 none
	once       map[string]bool // FirstTime topics
	stopping   bool            // gemgate stopped it: not a death
	reason     string          // why gemgate killed it, when it counts as a death
	checking   atomic.Bool     // a responsiveness check runs (CheckResponsive)

	// abandoned are calls their callers gave up that the worker has not answered: they may
	// still ask the client something (route.go, askerLocked); lostTrack: one was let go.
	abandoned map[*Call]struct{}
	lostTrack bool
}

// errSlotGone is a slot dropped from the pool between lookup and use; the caller retries.
var errSlotGone = errors.New("slot gone")

// acquire returns the slot's running worker, starting one if none runs; a start in progress
// is waited for. m is the caller, or nil while attaching. A caller the slot let go gets
// errSlotGone, so it never starts a successor nobody would use. Only an identity of the
// slot's key may start a worker (refuseStart). Once it has to wait for a worker or start
// one, it runs under a span (gemgate.worker.acquire): a worker found running gets none.
func (s *slot) acquire(ctx context.Context, id Identity, params json.RawMessage, m *Member) (_ *wrk, err error) {
	var span trace.Span
	slow := func() context.Context {
		if span == nil {
			ctx, span = telemetry.Step(ctx, "gemgate.worker.acquire", trace.SpanKindInternal,
				attribute.Bool("gemgate.worker.started", false)) // set again by a start
		}
		return ctx
	}
	defer func() {
		if span != nil {
			if err != nil {
				span.SetStatus(codes.Error, "no worker")
			}
			span.End()
		}
	}()
	for {
		s.mu.Lock()
		if _, in := s.members[m]; s.gone || m != nil && !in {
			s.mu.Unlock()
			return nil, errSlotGone
		}
		if w := s.w; w != nil {
			s.mu.Unlock()
			if !w.proc.Closing() {
				return w, nil
			}
			if err := s.awaitRetired(slow(), w, m); err != nil {
				return nil, err
			}
			continue
		}
		if ch := s.starting; ch != nil {
			s.mu.Unlock()
			select {
			case <-ch:
			case <-slow().Done():
				return nil, context.Cause(ctx)
			}
			s.mu.Lock()
			w, err := s.w, s.startErr
			s.mu.Unlock()
			if w == nil && err != nil {
				return nil, err
			}
			continue
		}
		ctx := slow()
		err := s.refuseStart(id)
		if err == nil {
			err = context.Cause(ctx) // nobody waits: start nothing
		}
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		ch := make(chan struct{})
		s.starting = ch
		s.stopIdleLocked()
		s.mu.Unlock()
		span.SetAttributes(attribute.Bool("gemgate.worker.started", true))
		// The start outlives its starter's request, so that whoever waits for it gets the
		// worker; InitTimeout bounds it. A starter that left gets its ctx's error, and the
		// worker settles as an unattended one (dropIfEmpty, by the caller).
		w, err := s.startWorker(context.WithoutCancel(ctx), id, params, ch)
		if err == nil {
			// Which worker it started: a first 2026-07-28 request may start two, the probe
			// of the user's legacy worker and the sessionless one (docs/eras.md).
			span.SetAttributes(attribute.String("gemgate.worker.protocol_version", w.version))
		}
		if err == nil && ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return w, err
	}
}

// awaitRetired waits until the watcher retires a worker that has just died, so that no call
// is handed to it in between. With on_worker_exit: end, m gets errSlotGone.
func (s *slot) awaitRetired(ctx context.Context, w *wrk, m *Member) error {
	select {
	case <-w.proc.Done():
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	s.mu.Lock()
	s.retireLocked(w)
	ends := m != nil && s.p.opts.OnWorkerExit == ExitEnd && !w.stopping
	s.mu.Unlock()
	if ends {
		return errSlotGone
	}
	return nil
}

// startWorker starts the slot's worker, whose start ch announces, and puts it in service. A
// panic of the start goes on up once the start has ended as failed, or waiters would wait on
// ch for good.
func (s *slot) startWorker(ctx context.Context, id Identity, params json.RawMessage, ch chan struct{}) (*wrk, error) {
	var w *wrk
	err := errStartPanicked // until p.start returns
	defer func() {
		if err == errStartPanicked {
			s.mu.Lock()
			s.starting, s.startErr = nil, err
			s.mu.Unlock()
			close(ch)
		}
	}()
	w, err = s.p.start(ctx, s, id, params)
	s.mu.Lock()
	if err == nil && s.gone { // the pool closed while the worker started: it must not survive
		w.stopping = true
		err = ErrClosed
		defer func() { w.proc.Stop(); s.p.releaseWorkerSlot(); s.p.opts.Metrics.exited(s.key.ReadOnly, nil) }()
	}
	s.starting, s.startErr = nil, err
	var carried []string
	if err == nil {
		s.w = w
		carried = s.carryLocked(w)
		s.p.wg.Add(1) // under the slot's lock, before shutdown can see the worker
	}
	s.mu.Unlock()
	close(ch)
	if err != nil {
		return nil, err
	}
	w.proc.AfterDone(func() { s.watch(w) })
	w.tellCarried(s, carried)
	return w, nil
}

// refuseStart returns ErrAccessMismatch or ErrGrantMismatch if id does not match the slot's
// key. A worker gets what the identity that starts it holds, so only a matching identity may
// start or renew it.
func (s *slot) refuseStart(id Identity) error {
	k := s.p.keyFor(id, s.key.Sessionless)
	k.Session = s.key.Session
	switch {
	case k.ReadOnly != s.key.ReadOnly:
		return ErrAccessMismatch
	case k != s.key:
		return ErrGrantMismatch
	}
	return nil
}

// errStartPanicked is what attaches that waited on a start that panicked get.
var errStartPanicked = errors.New("pool: the worker's start failed")

// start launches a worker for the slot's key and opens its session.
func (p *Pool) start(ctx context.Context, s *slot, id Identity, clientParams json.RawMessage) (*wrk, error) {
	if err := p.takeWorkerSlot(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			p.releaseWorkerSlot()
		}
	}()
	if p.opts.BeforeStart != nil {
		if err := p.opts.BeforeStart(id); err != nil {
			return nil, err
		}
	}
	started := time.Now()
	w, err := p.spawn(ctx, s, id)
	if err != nil {
		return nil, err
	}
	if err := p.open(ctx, s, w, clientParams); err != nil {
		return nil, err
	}
	ok = true
	p.opts.Metrics.started(s.key.ReadOnly, time.Since(started))
	w.log.Info("worker started", "pid", w.proc.Pid(), "read_only", s.key.ReadOnly, "protocol_version", w.version, "sessionless", w.sessionless)
	return w, nil
}

// spawn runs the process of a new worker for the slot, as the launcher says.
func (p *Pool) spawn(ctx context.Context, s *slot, id Identity) (*wrk, error) {
	wid := fmt.Sprintf("w%04x", p.nextW.Add(1))
	if !p.PerSession() {
		id.Session = wid
	}
	w := &wrk{id: wid, calls: map[*Call]struct{}{}, progress: map[string]*Call{},
		requests: map[string]pendingRequest{}, subs: map[string]map[*Member]bool{}, subPending: map[string]map[*Member]int{}, subsOf: map[*Member]int{}, heard: map[string]*Call{}, levels: map[*Member]int{},
		level: -1, once: map[string]bool{}}
	w.log = p.opts.Logger.With("user", id.User, "worker", wid)
	ctx, cancel := context.WithTimeout(ctx, p.opts.InitTimeout)
	defer cancel()
	launch, err := p.opts.Launcher.Launch(ctx, worker.Identity{User: id.User, Subject: id.Subject, Scopes: id.Scopes,
		ReadOnly: id.ReadOnly, Session: id.Session, Token: id.Token, Expiry: id.Expiry})
	if err != nil {
		return nil, &StartError{Err: fmt.Errorf("preparing the worker: %w", err)}
	}
	spec := launch.Spec
	spec.OnMessage = func(m *jsonrpc.Message) { s.onMessage(w, m) }
	spec.Logger = w.log
	if p.opts.Trace != nil {
		spec.OnTrace = func(dir string, line []byte) { p.opts.Trace(dir, wid, line) }
	}
	proc, err := worker.Start(spec)
	if err != nil {
		return nil, &StartError{Err: err}
	}
	w.proc, w.credExpiry = proc, launch.CredentialExpiry
	if p.opts.Trace != nil {
		p.traced.add(proc)
	}
	return w, nil
}

// open opens a fresh worker's stdio session, or stops the worker: server/discover for a
// Key.Sessionless slot, else the MCP handshake, followed for a user's worker by the era probe.
func (p *Pool) open(ctx context.Context, s *slot, w *wrk, clientParams json.RawMessage) (err error) {
	defer func() {
		if err != nil {
			w.proc.Stop()
			if !errors.Is(err, ErrNotSessionless) {
				p.opts.Metrics.startFailed()
			}
		}
	}()
	if s.key.Sessionless {
		w.version, w.sessionless = SessionlessVersion, true
		w.initResult, err = p.openSessionless(ctx, w.proc)
		return err
	}
	params, sendInitialized := p.ownParams(), true
	if p.PerSession() {
		// The client's own initialize goes to its worker; on a restart (no client params in
		// hand but the first ones) gemgate sends initialized itself.
		s.mu.Lock()
		params, sendInitialized = clientParams, s.prev != nil
		s.mu.Unlock()
	}
	w.initResult, w.version, err = p.handshake(ctx, w.proc, params, sendInitialized)
	if err != nil || p.PerSession() {
		return err
	}
	var sure bool
	w.sessionless, sure = p.discover(ctx, w.proc)
	if sure {
		p.learnEra(w.sessionless)
	}
	return nil
}

// watch handles a worker's end. One gemgate stopped is simply gone; one that died fails
// its queued calls, and its callers stay for a fresh worker or are let go, as configured.
// It runs once the worker is done (worker.Process.AfterDone).
func (s *slot) watch(w *wrk) {
	defer s.p.wg.Done()
	s.mu.Lock()
	stopped := w.stopping
	s.retireLocked(w)
	queued := slices.Concat(w.queue.lines...)
	w.queue = fairQueue{}
	w.progress, w.requests = map[string]*Call{}, map[string]pendingRequest{}
	var let []*Member
	if !stopped && s.p.opts.OnWorkerExit == ExitEnd {
		let = s.takeMembersLocked()
	}
	empty := len(s.members) == 0 && s.w == nil && s.starting == nil
	if empty {
		s.gone = true
	}
	s.mu.Unlock()
	if empty {
		s.p.forget(s)
	}
	s.p.releaseWorkerSlot()
	s.p.opts.Metrics.queued(-len(queued))
	exitErr := w.proc.Err()
	if stopped {
		exitErr = nil
	}
	s.p.opts.Metrics.exited(s.key.ReadOnly, exitErr)
	for _, c := range queued {
		c.finish(workerGone(c))
	}
	if stopped {
		return
	}
	reason := cmp.Or(w.reason, ReasonWorkerExit)
	w.log.Warn("worker ended on its own; its calls failed", "reason", reason, "sessions_let_go", len(let))
	for _, m := range let {
		m.letGo(reason)
	}
}

// stopLocked takes the worker out of service; the caller stops the process after unlocking.
func (s *slot) stopLocked() *wrk {
	w := s.w
	if w != nil {
		w.stopping = true
		s.retireLocked(w)
	}
	return w
}

// retireLocked takes w out of service, if it still is in it.
func (s *slot) retireLocked(w *wrk) {
	if s.w == w {
		s.w, s.prev = nil, w
	}
}

func (s *slot) stopIdleLocked() {
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
}

// settleLocked decides what an unattended slot does: a per-session worker stops now, a
// per-user one after the idle timeout, and a slot with nothing left leaves the pool. It
// returns a worker to stop once unlocked, and whether to drop the slot.
func (s *slot) settleLocked() (stop *wrk, drop bool) {
	if len(s.members) > 0 || s.starting != nil {
		return nil, false
	}
	if s.w != nil && (len(s.w.calls) > 0 || s.w.queue.len() > 0) {
		return nil, false
	}
	if s.w != nil && !s.p.PerSession() {
		if s.idle == nil {
			w := s.w
			s.idle = time.AfterFunc(s.p.opts.IdleTimeout, func() { s.idleEnd(w) })
		}
		return nil, false
	}
	s.gone = true
	return s.stopLocked(), true
}

// idleEnd ends a worker that stayed unattended for the idle timeout.
func (s *slot) idleEnd(w *wrk) {
	s.mu.Lock()
	if s.w != w || len(s.members) > 0 || len(w.calls) > 0 || w.queue.len() > 0 || s.starting != nil {
		s.mu.Unlock()
		return
	}
	s.idle = nil
	s.gone = true
	s.stopLocked()
	s.mu.Unlock()
	s.p.forget(s)
	w.log.Info("worker idle with no session attached; stopping it", "idle_timeout", s.p.opts.IdleTimeout.String())
	w.proc.Stop()
}

// shutdown stops the worker and lets every caller go.
func (s *slot) shutdown() {
	s.mu.Lock()
	s.gone = true
	s.stopIdleLocked()
	w := s.stopLocked()
	let := s.takeMembersLocked()
	s.mu.Unlock()
	for _, m := range let {
		m.letGo(ReasonShutdown)
	}
	if w != nil {
		w.proc.Stop()
	}
}

// takeMembersLocked takes every caller out of the slot, for letting them go once unlocked.
func (s *slot) takeMembersLocked() []*Member {
	let := slices.Collect(maps.Keys(s.members))
	clear(s.members)
	return let
}

func (s *slot) memberCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.members)
}

// dropIfEmpty drops a slot that a failed attach left with nothing.
func (s *slot) dropIfEmpty() {
	s.mu.Lock()
	stop, drop := s.settleLocked()
	s.mu.Unlock()
	s.settle(leftToDo{stop: stop, drop: drop})
}

// attachFrom adds a member coming from old (nil: a new one), if the slot is still in the pool
// and the member was not let go meanwhile. A moving member takes over what it held at old.
func (s *slot) attachFrom(m *Member, w *wrk, old *slot, uris []string, level int) (attached, letGo bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return false, false
	}
	if !m.s.CompareAndSwap(old, s) {
		return false, true
	}
	s.stopIdleLocked()
	s.members[m] = struct{}{}
	if s.w == w {
		w.takeOverLocked(m, uris, level)
	}
	return true, false
}
