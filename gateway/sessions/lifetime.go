package sessions

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Why a session ended. Every end has exactly one reason, logged and counted.
const (
	ReasonDeleted        = "deleted"
	ReasonIdle           = "idle"
	ReasonStreamlessIdle = "streamless_idle"
	ReasonStreamLost     = "stream_lost"
	ReasonProbeFailed    = "probe_failed"
	ReasonExpired        = "expired"
	ReasonWorkerExit     = "worker_exit"
	ReasonUnresponsive   = "unresponsive"
	ReasonShutdown       = "shutdown"
	ReasonTokenExpired   = "token_expired"
	ReasonStepUp         = "step_up" // a read-write token on a read-only session of a worker that keeps its login
)

// Lifetime is session lifetime policy. A zero duration takes DefaultLifetime's value; Never
// (any negative duration) turns a rule off.
type Lifetime struct {
	IdleTimeout           time.Duration // no client traffic for this long ends a session; Never: no idle end
	StreamlessIdleTimeout time.Duration // the same for a session that never opened a GET stream; Never: use IdleTimeout
	StreamLossGrace       time.Duration // a session whose GET stream closed ends after this, unless the client comes back; Never: at once
	MaxSessionLifetime    time.Duration // every session ends after this; default and Never: no cap
	RequestTimeout        time.Duration // a call running longer is cancelled; default and Never: no limit
	ProbeLead             time.Duration // a liveness ping goes out this long before the idle deadline; Never: no ping
	ProbeTimeout          time.Duration // an unanswered ping on the current stream ends the session after this
	MaxCallsPerSession    int           // calls in flight on one session; 0 = no limit
	Tick                  time.Duration // how often the reaper looks; default 500ms
}

// Never, as a Lifetime duration, turns its rule off.
const Never time.Duration = -1

// DefaultLifetime is the policy measured against real clients.
func DefaultLifetime() Lifetime {
	return Lifetime{
		IdleTimeout:           30 * time.Minute,
		StreamlessIdleTimeout: time.Minute,
		StreamLossGrace:       10 * time.Second,
		ProbeLead:             5 * time.Minute,
		ProbeTimeout:          30 * time.Second,
		Tick:                  500 * time.Millisecond,
	}
}

// WithDefaults resolves l as the reaper reads it: zero takes the default, Never becomes 0 (off).
func (l Lifetime) WithDefaults() Lifetime {
	d := DefaultLifetime()
	for _, f := range []struct{ v, def *time.Duration }{
		{&l.IdleTimeout, &d.IdleTimeout}, {&l.StreamlessIdleTimeout, &d.StreamlessIdleTimeout},
		{&l.StreamLossGrace, &d.StreamLossGrace}, {&l.MaxSessionLifetime, &d.MaxSessionLifetime},
		{&l.RequestTimeout, &d.RequestTimeout}, {&l.ProbeLead, &d.ProbeLead},
	} {
		switch {
		case *f.v == 0:
			*f.v = *f.def
		case *f.v < 0:
			*f.v = 0
		}
	}
	if l.ProbeTimeout <= 0 { // a ping that never times out would decide nothing
		l.ProbeTimeout = d.ProbeTimeout
	}
	if l.Tick <= 0 {
		l.Tick = d.Tick
	}
	return l
}

// Validate reports every unworkable combination at once, defaults filled in.
func (l Lifetime) Validate() error {
	var errs []error
	r := l.WithDefaults()
	if r.IdleTimeout > 0 && r.ProbeLead >= r.IdleTimeout {
		errs = append(errs, errors.New("probe_lead must be shorter than idle_timeout"))
	}
	if r.IdleTimeout > 0 && r.ProbeLead > 0 && r.ProbeTimeout >= r.ProbeLead {
		errs = append(errs, errors.New("probe_timeout must be shorter than probe_lead, or an unanswered ping could never decide"))
	}
	if r.IdleTimeout > 0 && r.StreamlessIdleTimeout > r.IdleTimeout {
		errs = append(errs, errors.New("streamless_idle_timeout must not exceed idle_timeout"))
	}
	if l.MaxCallsPerSession < 0 {
		errs = append(errs, errors.New("max_calls_per_session must not be negative"))
	}
	return errors.Join(errs...)
}

// Probe is one liveness ping sent down a session's GET stream.
type Probe struct {
	Gen  uint64 // the stream generation it was written to
	Sent time.Time
	done atomic.Bool // answered
}

func (p *Probe) Answer()        { p.done.Store(true) }
func (p *Probe) answered() bool { return p.done.Load() }

// State is what the reaper reads of a session, taken at one instant.
type State struct {
	Now, Opened, LastActive, StreamLost time.Time
	Busy, EverStream, StreamOpen        bool
	Probe                               *Probe // the latest liveness ping, nil since the last activity
	CurrentGen                          uint64 // the generation of the session's current GET stream
}

// Verdict is a reason to end the session ("" keeps it), and whether a probe goes out now.
func (l Lifetime) Verdict(st State) (reason string, sendProbe bool) {
	// A cap whatever the session does: a client always in a call would hold its worker's
	// login as the user for ever.
	if l.MaxSessionLifetime > 0 && st.Now.Sub(st.Opened) >= l.MaxSessionLifetime {
		return ReasonExpired, false
	}
	if st.Busy {
		return "", false // a call in flight is never reaped for idleness
	}
	idle := st.Now.Sub(st.LastActive)
	if !st.EverStream {
		limit := l.StreamlessIdleTimeout
		if limit <= 0 {
			limit = l.IdleTimeout
		}
		if limit > 0 && idle >= limit {
			return ReasonStreamlessIdle, false
		}
		return "", false
	}
	if !st.StreamOpen && !st.StreamLost.IsZero() && st.Now.Sub(st.StreamLost) >= l.StreamLossGrace {
		return ReasonStreamLost, false
	}
	if l.IdleTimeout > 0 && idle >= l.IdleTimeout {
		return ReasonIdle, false
	}
	if p := st.Probe; p != nil && p.Gen == st.CurrentGen && !p.answered() && st.Now.Sub(p.Sent) >= l.ProbeTimeout {
		return ReasonProbeFailed, false
	}
	probeDue := l.IdleTimeout > 0 && idle >= l.IdleTimeout-l.ProbeLead
	// A probe written to a superseded stream decides nothing: it is sent again on the current one.
	needProbe := st.Probe == nil || (st.Probe.Gen != st.CurrentGen && !st.Probe.answered())
	return "", probeDue && st.StreamOpen && needProbe
}

// Reap runs pass every tick; stop, idempotent, waits for a pass under way.
func Reap(tick time.Duration, pass func(now time.Time)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-t.C:
				pass(now)
			}
		}
	}()
	return sync.OnceFunc(func() { close(quit); <-done })
}
