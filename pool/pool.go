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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/worker"
)

// How workers are shared; see Settings.WorkerPer.
const (
	PerUser    = "user"
	PerSession = "session"
)

// What happens to a worker's sessions when it dies; see Settings.OnWorkerExit.
const (
	ExitKeep = "keep"
	ExitEnd  = "end"
)

// What happens to a worker whose backend login was made with a credential that has since
// expired. Backends such as GemStone check a token only at login, so the login outlives it.
const (
	// ExpiryKeep lets the worker run on; every request still needs a live token.
	ExpiryKeep = "keep"
	// ExpiryRestart starts the worker again with a fresh credential at the next request after
	// expiry, with gemgate's handshake replayed; the sessions stay, the worker's state does not.
	ExpiryRestart = "restart"
	// ExpiryEnd ends the worker and its sessions at the next request after expiry.
	ExpiryEnd = "end"
)

// Why the pool let go of a caller (Caller.Detached).
const (
	ReasonWorkerExit   = "worker_exit"
	ReasonUnresponsive = "unresponsive"
	ReasonTokenExpired = "token_expired"
	ReasonShutdown     = "shutdown"
)

// Settings are the operator's choices.
type Settings struct {
	WorkerPer    string        // PerUser (default) or PerSession
	IdleTimeout  time.Duration // a per-user worker with nothing attached ends after this; default 10m
	OnWorkerExit string        // ExitKeep (default with PerUser) or ExitEnd; PerSession always ends
	// OnTokenExpiry is ExpiryKeep (default), ExpiryRestart or ExpiryEnd.
	OnTokenExpiry string
	MaxWorkers    int // workers running at once; 0 = no cap
	// MaxCallsPerWorker bounds the calls a worker holds: running at it and waiting for a turn.
	// Default 64; beyond it a call is refused with ErrWorkerBusy.
	MaxCallsPerWorker int
	// Concurrency is how many calls run at the worker at once; 0 = as many as come. Calls
	// beyond it wait, served round robin across the callers.
	Concurrency int
	// SessionsOnly, when set, is why the pool serves callers of sessions only: a sessionless
	// (2026-07-28) request is refused with it (SessionlessRefused), whatever WorkerPer says.
	// A worker whose state between calls is the client's (a GemStone session's transaction
	// view) has no owner for that state in a request without a session.
	SessionsOnly string
}

// DefaultIdleTimeout and DefaultMaxCallsPerWorker are the defaults of Settings.
const (
	DefaultIdleTimeout       = 10 * time.Minute
	DefaultMaxCallsPerWorker = 64
)

// Validate reports every unworkable setting at once.
func (s Settings) Validate() error {
	var errs []error
	if s.WorkerPer != "" && s.WorkerPer != PerUser && s.WorkerPer != PerSession {
		errs = append(errs, fmt.Errorf("worker_per %q is not user or session", s.WorkerPer))
	}
	if s.OnWorkerExit != "" && s.OnWorkerExit != ExitKeep && s.OnWorkerExit != ExitEnd {
		errs = append(errs, fmt.Errorf("on_worker_exit %q is not keep or end", s.OnWorkerExit))
	}
	if s.OnTokenExpiry != "" && s.OnTokenExpiry != ExpiryKeep && s.OnTokenExpiry != ExpiryRestart && s.OnTokenExpiry != ExpiryEnd {
		errs = append(errs, fmt.Errorf("on_token_expiry %q is not keep, restart or end", s.OnTokenExpiry))
	}
	if s.IdleTimeout < 0 {
		errs = append(errs, errors.New("worker_idle_timeout must not be negative"))
	}
	if s.MaxWorkers < 0 || s.MaxCallsPerWorker < 0 || s.Concurrency < 0 {
		errs = append(errs, errors.New("max_workers, max_calls_per_worker and worker_concurrency must not be negative"))
	}
	return errors.Join(errs...)
}

func (s Settings) withDefaults() Settings {
	s.WorkerPer = cmp.Or(s.WorkerPer, PerUser)
	s.IdleTimeout = cmp.Or(s.IdleTimeout, DefaultIdleTimeout)
	s.OnTokenExpiry = cmp.Or(s.OnTokenExpiry, ExpiryKeep)
	s.MaxCallsPerWorker = cmp.Or(s.MaxCallsPerWorker, DefaultMaxCallsPerWorker)
	switch {
	case s.WorkerPer == PerSession:
		s.OnWorkerExit = ExitEnd
	case s.OnWorkerExit == "":
		s.OnWorkerExit = ExitKeep
	}
	return s
}

// Identity is who a caller is, as the pool keys workers (Key) and starts them: what the
// gateway verified of the request's token, and the access mode it decided on.
type Identity struct {
	Issuer, Subject, User string    // User: the name a worker acts as (the user claim)
	Scopes, Audience      []string  // the token's scope and audience sets
	Expiry                time.Time // the token's; zero when not from a token (auth none)
	ReadOnly              bool
	// Session is the caller's legacy session (the worker's key with worker_per: session).
	Session string
	// Token is the request's raw bearer token, for the worker's credential only.
	Token string
}

// Launcher says how to start a worker; worker.CommandLauncher is one.
type Launcher interface {
	Launch(ctx context.Context, id worker.Identity) (worker.Launch, error)
}

// Options configure a Pool.
type Options struct {
	Settings
	Launcher Launcher // required
	// Versions are the protocol revisions gemgate speaks, its latest first.
	Versions []string
	// InitTimeout bounds a worker's launch, and then its answer to initialize; default 60s.
	InitTimeout time.Duration
	Logger      *slog.Logger // nil discards
	Metrics     *Metrics     // nil: none (kept in a registry of the pool's own)
	// Trace, if set, sees every line to and from a worker, with the worker's id.
	Trace func(direction, worker string, line []byte)
	// BeforeStart, if set, may refuse a worker start (a per-user start rate); its error is
	// returned, wrapped, to whoever needed the worker.
	BeforeStart func(Identity) error
	// Now is the clock; nil is time.Now. Tests inject one.
	Now func() time.Time
}

// Errors a caller can act on.
var (
	// ErrTooManyWorkers: max_workers are running; try again later (503).
	ErrTooManyWorkers = errors.New("the gateway is at its worker limit; try again later")
	// ErrWorkerBusy: the worker holds max_calls_per_worker calls already (429).
	ErrWorkerBusy = errors.New("too many calls are waiting for this worker")
	// ErrInitTimeout: the worker did not answer initialize in time.
	ErrInitTimeout = errors.New("the worker did not answer initialize in time")
	// ErrDetached: the caller is no longer attached (its session ended).
	ErrDetached = errors.New("the caller is detached from its worker")
	// ErrClosed: the pool is shutting down.
	ErrClosed = errors.New("the pool is closed")
	// ErrAccessMismatch: the worker must be started or renewed, and the call's identity does
	// not match the worker's key (a call narrowed to read-only, or another scope or audience
	// set), so it may not do it. A matching call will (503, retry).
	ErrAccessMismatch = errors.New("the session's worker is not running or its credential expired, and a call of another access mode or scope set does not start or renew it")
	// ErrGrantMismatch is the ErrAccessMismatch of a call of the worker's access mode whose
	// token grants another scope or audience set than the worker's key (it wraps it).
	ErrGrantMismatch = fmt.Errorf("%w (the call's token grants other scopes or audiences than the worker's)", ErrAccessMismatch)
)

// RefusedError is a worker's own error answer to initialize, for the client to read.
type RefusedError struct{ Answer json.RawMessage }

func (e *RefusedError) Error() string {
	return "the worker refused initialize: " + clip.Bytes(e.Answer, 100)
}

// StartError is a worker that could not be started or did not get through its handshake.
type StartError struct {
	Exited bool // the worker exited before answering
	Err    error
}

func (e *StartError) Error() string { return "starting a worker: " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Key says which worker serves a caller. It holds everything the worker is given and acts on
// (user name, scopes, audiences), so that a caller never runs in a worker that holds more
// than its own token grants, and two subjects never share a worker (DESIGN §9).
type Key struct {
	Issuer, Subject string
	User            string
	ReadOnly        bool
	// Scopes and Audience are the token's scope and audience sets, canonical (grantSet).
	Scopes, Audience string
	Session          string // set only with worker_per: session
	// Sessionless marks the worker for the user's 2026-07-28 requests when the program speaks
	// that revision itself. It is a process of its own: one stdio session has one era.
	Sessionless bool
}

// Pool holds the workers.
type Pool struct {
	opts Options // with its defaults

	mu      sync.Mutex
	slots   map[Key]*slot
	running int // workers running or starting, for max_workers
	closed  bool
	wg      sync.WaitGroup // worker watchers

	nextW atomic.Uint64 // numbers the workers
	eras  atomic.Int32  // whether the worker program speaks the sessionless revision: 0 unknown, 1 yes, 2 no
	// nextReq numbers the worker requests passed to clients ("gemgate-wN"). It is pool-wide
	// so that no other worker reuses an id a client may still answer.
	nextReq atomic.Uint64

	// traced are the workers whose secrets the message trace redacts (RedactSecrets).
	traced traceSecrets
}

// New builds a pool; it starts nothing until a caller attaches.
func New(o Options) (*Pool, error) {
	if o.Launcher == nil {
		return nil, errors.New("pool: Launcher is required")
	}
	if err := o.Settings.Validate(); err != nil {
		return nil, err
	}
	o.Settings = o.Settings.withDefaults()
	if o.InitTimeout <= 0 {
		o.InitTimeout = 60 * time.Second
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(prometheus.NewRegistry())
	}
	if len(o.Versions) == 0 {
		o.Versions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	return &Pool{opts: o, slots: map[Key]*slot{}}, nil
}

// PerSession reports whether each session has a worker of its own.
func (p *Pool) PerSession() bool { return p.opts.WorkerPer == PerSession }

// KeepsLogin reports whether the pool's workers keep state between calls that only their
// session knows (Settings.SessionsOnly: GemStone's login): such a session is never moved to
// another worker.
func (p *Pool) KeepsLogin() bool { return p.opts.SessionsOnly != "" }

// SessionlessRefused is why a sessionless request has no worker here, "" when it has one (the
// user's): Settings.SessionsOnly, or with worker_per: session, that every worker is a
// session's.
func (p *Pool) SessionlessRefused() string {
	switch {
	case p.opts.SessionsOnly != "":
		return p.opts.SessionsOnly
	case p.PerSession():
		return "this gateway runs one worker per session (worker_per: session)"
	}
	return ""
}

// keyFor is the key of the worker that serves id: the user's sessionless one if sessionless
// (worker_per: user only).
func (p *Pool) keyFor(id Identity, sessionless bool) Key {
	k := Key{Issuer: id.Issuer, Subject: id.Subject, User: id.User, ReadOnly: id.ReadOnly,
		Scopes: grantSet(id.Scopes), Audience: grantSet(id.Audience), Sessionless: sessionless && !p.PerSession()}
	if p.PerSession() {
		k.Session = id.Session
	}
	return k
}

// GrantList is a set of scopes or audiences in canonical order, as a worker's grant holds
// them (Member.Grant) and the worker is told its scopes: worker.GrantList.
func GrantList(values []string) []string { return worker.GrantList(values) }

// grantSet is GrantList as one string, each value prefixed with its length, so that no two
// sets share a form (a scope from scp may hold a space).
func grantSet(values []string) string {
	var b strings.Builder
	for _, v := range GrantList(values) {
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.WriteString(v)
	}
	return b.String()
}

// Grant is the scope and audience sets the member's worker was started with (its key's, as
// GrantList), shared: not to be changed. ok is false once the member is detached.
func (m *Member) Grant() (scopes, audience []string, ok bool) {
	s := m.s.Load()
	if s == nil {
		return nil, nil, false
	}
	return s.scopes, s.audience, true
}

// Serves reports whether the worker that would serve id (the sessionless one if sessionless)
// runs here or is starting. A draining gateway uses it to keep serving such users and to
// refuse, with a retryable 503, requests that would start a worker.
func (p *Pool) Serves(id Identity, sessionless bool) bool {
	key := p.keyFor(id, sessionless)
	p.mu.Lock()
	s := p.slots[key]
	p.mu.Unlock()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.gone && (s.w != nil || s.starting != nil)
}

// slotFor finds or makes the slot of key, whose identities id is one of.
func (p *Pool) slotFor(key Key, id Identity) (*slot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	s := p.slots[key]
	if s == nil {
		s = &slot{p: p, key: key, scopes: GrantList(id.Scopes), audience: GrantList(id.Audience),
			members: map[*Member]struct{}{}}
		p.slots[key] = s
	}
	return s, nil
}

// takeWorkerSlot counts a worker about to start against max_workers.
func (p *Pool) takeWorkerSlot() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.opts.MaxWorkers > 0 && p.running >= p.opts.MaxWorkers {
		return ErrTooManyWorkers
	}
	p.running++
	return nil
}

func (p *Pool) releaseWorkerSlot() {
	p.mu.Lock()
	p.running--
	p.mu.Unlock()
}

// forget drops an empty slot with no worker.
func (p *Pool) forget(s *slot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.slots[s.key] == s {
		delete(p.slots, s.key)
	}
}

// Close stops every worker and detaches every caller; it returns once they are gone.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	slots := slices.Collect(maps.Values(p.slots))
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range slots {
		wg.Go(s.shutdown)
	}
	wg.Wait()
	p.wg.Wait()
}

// Attach is what a caller brings to attach.
type Attach struct {
	Identity Identity
	Caller   Caller
	// Params are the client's initialize params, negotiated to a version gemgate speaks.
	Params json.RawMessage
	// Caps are the capabilities Params declare; nil reads them from Params.
	Caps *Capabilities
	// Sessionless asks for the user's sessionless worker (worker_per: user only), opened with
	// server/discover instead of initialize. If the program does not speak 2026-07-28, the
	// attach fails with ErrNotSessionless.
	Sessionless bool
}

// Attach attaches a caller to the worker of its identity, starting and initializing the
// worker if need be, and returns the InitializeResult for the caller.
func (p *Pool) Attach(ctx context.Context, a Attach) (*Member, json.RawMessage, error) {
	key := p.keyFor(a.Identity, a.Sessionless)
	m := &Member{c: a.Caller, params: a.Params, attachedSessionless: key.Sessionless}
	if a.Caps != nil {
		m.caps = *a.Caps
	} else {
		m.caps = ClientCapabilities(a.Params)
	}
	for {
		s, w, err := p.workerFor(ctx, key, a.Identity, a.Params)
		if err != nil {
			return nil, nil, err
		}
		if attached, _ := s.attachFrom(m, w, nil, nil, -1); !attached {
			continue
		}
		result := w.initResult
		if !p.PerSession() && !s.key.Sessionless {
			result = p.resultFor(w, a.Params)
		}
		w.log.Debug("session attached", "sessions", s.memberCount())
		p.opts.Metrics.attached(s.memberCount())
		return m, result, nil
	}
}

// workerFor is key's slot and its running worker, started for id if need be (acquire).
func (p *Pool) workerFor(ctx context.Context, key Key, id Identity, params json.RawMessage) (*slot, *wrk, error) {
	for {
		s, err := p.slotFor(key, id)
		if err != nil {
			return nil, nil, err
		}
		w, err := s.acquire(ctx, id, params, nil)
		if errors.Is(err, errSlotGone) {
			continue
		}
		if err != nil {
			s.dropIfEmpty()
			return nil, nil, err
		}
		return s, w, nil
	}
}
