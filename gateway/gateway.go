package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemgate/gemgate/gateway/limit"
	"github.com/gemgate/gemgate/gateway/metrics"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/gateway/sessions"
	"github.com/gemgate/gemgate/gateway/trace"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/telemetry"
)

// Options configures a Gateway. Zero values mean the documented defaults.
type Options struct {
	MCPPath   string // default "/mcp"
	PublicURL string // the resource identifier; only used for metadata paths and logs

	// Authenticate wraps the MCP endpoint (auth.Authenticator.Middleware, or auth.LocalUser).
	// Required. It must refuse a token lacking a required scope (postMessage checks again).
	Authenticate func(http.Handler) http.Handler
	// Metadata serves RFC 9728 metadata at the well-known paths; nil when there is no issuer.
	Metadata http.Handler
	// InsufficientScope sets the WWW-Authenticate header of a 403 step-up challenge.
	InsufficientScope func(h http.Header, granted, needed []string, description string)

	Policy  *policy.Policy // required
	Workers pool.Launcher  // required: how a worker is started
	Pool    pool.Settings  // how workers are shared and how long they live

	AllowedOrigins       []string // exact origins (scheme://host[:port]) allowed besides none
	AllowLoopbackOrigins bool     // allow http(s)://localhost, 127.0.0.1, [::1] origins
	TrustedProxies       []netip.Prefix

	MaxBodyBytes int64         // default 4 MiB
	ReadTimeout  time.Duration // a request's arrival (requestDeadline); default 30s
	InitTimeout  time.Duration // how long a worker may take to answer initialize; default 60s

	Lifetime sessions.Lifetime
	Limits   limit.Settings // session caps and the per-user worker start rate
	// PostAnswers is how an answer alone travels: PostAnswersSSE (default, as the reference SDK
	// servers and the conformance suite expect) when the client accepts it, or PostAnswersJSON.
	PostAnswers string
	// InputRequiredTimeout is how long a 2026-07-28 call parked on a legacy worker's question
	// waits for the client's retry; then the worker's request gets an error. Default 2m.
	InputRequiredTimeout time.Duration
	// OnTokenExpiry (pool.ExpiryKeep, ExpiryRestart, ExpiryEnd) overrides Pool.OnTokenExpiry.
	OnTokenExpiry string

	// Ready is an extra check for /readyz, which shows only "not ready" and the error's
	// PublicReason(), if any: a phrase that reveals no configuration.
	Ready func(context.Context) error
	// Degraded keeps /readyz at 200 but shows its error, which must reveal no configuration
	// (cached keys while the issuer is unreachable: a blip must not become an outage).
	Degraded func(context.Context) error
	Logger   *slog.Logger       // nil discards
	Metrics  *metrics.Metrics   // nil: no metrics
	Trace    *trace.Tracer      // nil: no message trace
	Tracing  *telemetry.Tracing // nil: no distributed tracing (spans)

	now               func() time.Time // the pool's clock; tests set it
	keepaliveInterval time.Duration    // default wire.KeepaliveInterval; tests set it
	writeTimeout      time.Duration    // default wire.WriteTimeout; tests set it
}

// How answers to POSTed requests travel; see Options.PostAnswers.
const (
	PostAnswersSSE  = "sse"
	PostAnswersJSON = "json"
)

// Gateway is the HTTP front end. Build it with New, serve Handler, end it with Shutdown.
type Gateway struct {
	opts     Options
	log      *slog.Logger
	metrics  *metrics.Metrics
	trace    *trace.Tracer
	sessions *sessions.Table[owner, *session]
	pool     *pool.Pool
	starts   *limit.StartRate[owner] // nil: no rate
	router   http.Handler

	closing     atomic.Bool
	notReadyLog quietLog      // /readyz is anyone's to call: see quietLog
	stopping    chan struct{} // closed when shutdown begins: streams end
	stopOnce    sync.Once
	stopReaper  func()               // ends the session reaper (sessions.Reap)
	sessionless *sessionless.Adapter // the 2026-07-28 era's requests

	mu     sync.Mutex     // orders admit and endLater against Close
	closed bool           // Close has begun: no session may be admitted, nor ended by endLater
	wg     sync.WaitGroup // the session ends endLater started, which Close waits for
}

// New checks the options and builds the gateway. It starts the session reaper.
func New(o Options) (*Gateway, error) {
	if o.OnTokenExpiry != "" {
		o.Pool.OnTokenExpiry = o.OnTokenExpiry
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	o.setDefaults()
	g := &Gateway{
		opts:        o,
		log:         cmp.Or(o.Logger, slog.New(slog.DiscardHandler)),
		metrics:     o.Metrics,
		sessions:    sessions.NewTable(o.Limits.MaxSessions, o.Limits.MaxSessionsPerUser, (*session).key),
		starts:      limit.NewStartRate[owner](o.Limits.WorkerStartRate, o.Limits.WorkerStartBurst),
		notReadyLog: quietLog{interval: time.Minute},
		stopping:    make(chan struct{}),
	}
	// Workers' lines are redacted before tracing (worker/redact.go): only worth it with a trace.
	var traceWorker func(dir, worker string, line []byte)
	if o.Trace != nil {
		traceWorker = func(dir, worker string, line []byte) { g.trace.Line(dir, worker, line) }
	}
	p, err := pool.New(pool.Options{
		Settings: o.Pool, Launcher: o.Workers, Versions: supportedVersions, InitTimeout: o.InitTimeout,
		Logger: g.log, Metrics: g.metrics.Pool(), Now: o.now,
		Trace: traceWorker,
		BeforeStart: func(id pool.Identity) error {
			return g.starts.Take(owner{id.Issuer, id.Subject}, time.Now())
		},
	})
	if err != nil {
		return nil, err
	}
	g.pool = p
	g.trace = o.Trace.WithSecrets(p.RedactSecrets) // the caller's Tracer is left as it was
	g.sessionless = sessionless.New(sessionless.Config{
		Pool: p, Steps: g.sessionlessSteps(), Log: g.log, Legacy: supportedVersions,
		InputRequiredTimeout: o.InputRequiredTimeout, Stopping: g.stopping,
		Keepalive: o.keepaliveInterval, WriteTimeout: o.writeTimeout,
		WorkerRetryAfter: workerRetryAfter, ListenRetryAfter: sessionLimitRetryAfter,
	})
	g.router = g.requestDeadline(g.routes())
	g.stopReaper = sessions.Reap(o.Lifetime.Tick, g.reap)
	return g, nil
}

func (o *Options) validate() error {
	var errs []error
	if o.Authenticate == nil {
		errs = append(errs, errors.New("gateway: Authenticate is required"))
	}
	if o.Policy == nil {
		errs = append(errs, errors.New("gateway: Policy is required"))
	}
	if o.Workers == nil {
		errs = append(errs, errors.New("gateway: Workers is required"))
	}
	if o.PostAnswers != "" && o.PostAnswers != PostAnswersSSE && o.PostAnswers != PostAnswersJSON {
		errs = append(errs, fmt.Errorf("gateway: post_answers %q is not sse or json", o.PostAnswers))
	}
	errs = append(errs, o.Pool.Validate(), o.Lifetime.Validate(), o.Limits.Validate())
	return errors.Join(errs...) // nils dropped
}

func (o *Options) setDefaults() {
	if o.MCPPath == "" {
		o.MCPPath = "/mcp"
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 4 << 20
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 30 * time.Second
	}
	if o.InitTimeout <= 0 {
		o.InitTimeout = 60 * time.Second
	}
	o.keepaliveInterval = cmp.Or(o.keepaliveInterval, wire.KeepaliveInterval)
	o.writeTimeout = cmp.Or(o.writeTimeout, wire.WriteTimeout)
	o.Lifetime = o.Lifetime.WithDefaults()
	o.Limits = o.Limits.WithDefaults()
}

func (g *Gateway) Handler() http.Handler { return g.router }

func (g *Gateway) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if g.closing.Load() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if g.opts.Ready != nil {
		if err := g.opts.Ready(ctx); err != nil {
			// The public reason keys the quiet log: the error may name an ephemeral port.
			msg, cause := "not ready", err.Error()
			var pr interface{ PublicReason() string }
			if errors.As(err, &pr) {
				msg += ": " + pr.PublicReason()
				cause = pr.PublicReason()
			}
			if g.notReadyLog.allow(cause, time.Now()) {
				g.log.Warn("not ready (the same cause is logged at most once a minute)", "error", err)
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
	}
	g.notReadyLog.reset()
	if g.opts.Degraded != nil {
		if err := g.opts.Degraded(ctx); err != nil {
			_, _ = w.Write([]byte("ready (degraded: " + err.Error() + ")\n"))
			return
		}
	}
	_, _ = w.Write([]byte("ready\n"))
}

// recoverer turns a panic in a handler into a 500 without taking the gateway down.
func (g *Gateway) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Not the request, which an idle stream would hold under this frame for hours.
		ctx := r.Context()
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				g.log.Error("handler panicked", "panic", v, "request_id", requestID(ctx))
				http.Error(w, "internal error", http.StatusInternalServerError)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// BeginShutdown is phase 2 of a graceful stop (drain.go).
func (g *Gateway) BeginShutdown() {
	g.BeginDrain()
	g.stopOnce.Do(func() { close(g.stopping) })
}

// Close is phase 3 of a graceful stop (drain.go), after the HTTP server's Shutdown.
func (g *Gateway) Close() {
	g.BeginShutdown()
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.stopReaper()
	var wg sync.WaitGroup
	for _, s := range g.sessions.All() {
		wg.Add(1)
		go func() { defer wg.Done(); g.endSession(s, sessions.ReasonShutdown) }()
	}
	wg.Wait()
	g.wg.Wait()
	g.pool.Close()
}

// stopped reports whether Close has begun: the workers are being stopped.
func (g *Gateway) stopped() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// admit makes a started session visible, unless Close has begun or its worker ended.
func (g *Gateway) admit(s *session) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return sessions.ReasonShutdown
	}
	if s.lostEarly != "" {
		return s.lostEarly
	}
	s.admitted = true
	g.sessions.Commit(s)
	return ""
}

// endLater ends s on a goroutine Close waits for, unless Close has begun (its WaitGroup must
// not grow while it waits). A session not yet admitted keeps the reason for admit.
func (g *Gateway) endLater(s *session, reason string) {
	g.mu.Lock()
	early := !s.admitted && s.lostEarly == ""
	switch {
	case early:
		s.lostEarly = reason
	case s.admitted && !g.closed:
		g.wg.Add(1)
		go func() { defer g.wg.Done(); g.endSession(s, reason) }()
	}
	g.mu.Unlock()
	if early { // logged outside the lock that admit and Close take
		s.log.Warn("the session's worker ended before the session opened; refusing it", "reason", reason)
	}
}

// keepaliveTicker ticks a stream's keepalive comments; unreferenced, it is collected.
func (g *Gateway) keepaliveTicker() *time.Ticker { return time.NewTicker(g.opts.keepaliveInterval) }

// Sessions is the number of open sessions.
func (g *Gateway) Sessions() int { return g.sessions.Len() }

// quietLog passes a warning anyone can trigger (/readyz) when new, else once per interval.
type quietLog struct {
	interval time.Duration

	mu   sync.Mutex
	last string // "" after reset
	at   time.Time
}

func (q *quietLog) allow(text string, now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if text == q.last && now.Sub(q.at) < q.interval {
		return false
	}
	q.last, q.at = text, now
	return true
}

func (q *quietLog) reset() {
	q.mu.Lock()
	q.last = ""
	q.mu.Unlock()
}
