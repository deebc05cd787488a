package sessions

import (
	"strings"
	"testing"
	"time"
)

func TestVerdict(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	l := DefaultLifetime() // idle 30m, streamless 1m, grace 10s, probe lead 5m, probe timeout 30s
	capped := l
	capped.MaxSessionLifetime = 8 * time.Hour
	noStreamless := l
	noStreamless.StreamlessIdleTimeout = 0
	never := Lifetime{ProbeTimeout: 30 * time.Second}

	answered := func(gen uint64, sentAgo time.Duration) *Probe {
		p := &Probe{Gen: gen, Sent: t0.Add(-sentAgo)}
		p.Answer()
		return p
	}
	unanswered := func(gen uint64, sentAgo time.Duration) *Probe { return &Probe{Gen: gen, Sent: t0.Add(-sentAgo)} }
	// st is a session opened an hour ago whose client was last active idle ago.
	st := func(idle time.Duration, mod func(*State)) State {
		s := State{Now: t0, Opened: t0.Add(-time.Hour), LastActive: t0.Add(-idle)}
		if mod != nil {
			mod(&s)
		}
		return s
	}
	streaming := func(s *State) { s.EverStream, s.StreamOpen, s.CurrentGen = true, true, 1 }
	with := func(mods ...func(*State)) func(*State) {
		return func(s *State) {
			for _, m := range mods {
				m(s)
			}
		}
	}

	tests := []struct {
		name       string
		lifetime   Lifetime
		state      State
		wantReason string
		wantProbe  bool
	}{
		{"streamless, recently active", l, st(59*time.Second, nil), "", false},
		{"streamless idle at 1 minute", l, st(time.Minute, nil), ReasonStreamlessIdle, false},
		{"streamless limit 0 falls back to idle_timeout", noStreamless, st(29*time.Minute, nil), "", false},
		{"streamless limit 0, idle_timeout reached", noStreamless, st(30*time.Minute, nil), ReasonStreamlessIdle, false},
		{"streamless never gets a probe", l, st(50*time.Second, nil), "", false},
		{"busy streamless is never reaped", l, st(2*time.Hour, func(s *State) { s.Busy = true }), "", false},
		{"busy past every idle limit is never reaped", l, st(48*time.Hour, func(s *State) {
			s.Busy, s.EverStream, s.StreamLost = true, true, t0.Add(-time.Hour)
		}), "", false},
		{"busy past max_session_lifetime expires all the same", capped, st(0, func(s *State) {
			s.Busy, s.EverStream, s.StreamOpen, s.CurrentGen = true, true, true, 1
			s.Opened = t0.Add(-48 * time.Hour)
		}), ReasonExpired, false},

		{"stream open, before the probe lead", l, st(24*time.Minute, streaming), "", false},
		{"probe due with an open stream", l, st(25*time.Minute, streaming), "", true},
		{"probe due but no stream open: not sent", l, st(25*time.Minute, func(s *State) { s.EverStream, s.CurrentGen = true, 1 }), "", false},
		{"probe in flight, not yet timed out", l, st(26*time.Minute, with(streaming, func(s *State) { s.Probe = unanswered(1, 29*time.Second) })), "", false},
		{"unanswered probe on the current stream", l, st(26*time.Minute, with(streaming, func(s *State) { s.Probe = unanswered(1, 30*time.Second) })), ReasonProbeFailed, false},
		{"probe on a superseded stream is re-sent", l, st(26*time.Minute, with(streaming, func(s *State) {
			s.CurrentGen = 2
			s.Probe = unanswered(1, 40*time.Second)
		})), "", true},
		{"answered probe on a superseded stream decides nothing more", l, st(26*time.Minute, with(streaming, func(s *State) {
			s.CurrentGen = 2
			s.Probe = answered(1, 40*time.Second)
		})), "", false},
		{"answered probe keeps the session until idle", l, st(29*time.Minute, with(streaming, func(s *State) { s.Probe = answered(1, 4*time.Minute) })), "", false},
		{"answered probe does not extend idleness", l, st(30*time.Minute, with(streaming, func(s *State) { s.Probe = answered(1, 5*time.Minute) })), ReasonIdle, false},
		{"idle with a stream and no probe", l, st(30*time.Minute, streaming), ReasonIdle, false},

		{"stream lost, within the grace", l, st(time.Second, func(s *State) {
			s.EverStream, s.CurrentGen, s.StreamLost = true, 1, t0.Add(-9*time.Second)
		}), "", false},
		{"stream lost past the grace", l, st(time.Second, func(s *State) {
			s.EverStream, s.CurrentGen, s.StreamLost = true, 1, t0.Add(-10*time.Second)
		}), ReasonStreamLost, false},
		{"stream lost but a new one is open", l, st(time.Second, with(streaming, func(s *State) { s.StreamLost = t0.Add(-time.Minute) })), "", false},

		{"max lifetime not reached", capped, st(time.Second, func(s *State) { s.Opened = t0.Add(-7 * time.Hour) }), "", false},
		{"max lifetime reached", capped, st(time.Second, with(streaming, func(s *State) { s.Opened = t0.Add(-8 * time.Hour) })), ReasonExpired, false},
		{"no cap by default", l, st(time.Second, with(streaming, func(s *State) { s.Opened = t0.Add(-1000 * time.Hour) })), "", false},
		{"idle_timeout 0 never idles", never, st(1000*time.Hour, streaming), "", false},
		{"idle_timeout 0 never idles a streamless session", never, st(1000*time.Hour, nil), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, probe := tt.lifetime.Verdict(tt.state)
			if reason != tt.wantReason || probe != tt.wantProbe {
				t.Errorf("verdict = (%q, %v), want (%q, %v)", reason, probe, tt.wantReason, tt.wantProbe)
			}
		})
	}
}

func TestLifetimeValidate(t *testing.T) {
	tests := []struct {
		name string
		l    Lifetime
		want []string // fragments of the errors, all of them reported at once
	}{
		{"defaults", DefaultLifetime(), nil},
		{"zero", Lifetime{}, nil},
		{"every rule off", Lifetime{IdleTimeout: Never, StreamlessIdleTimeout: Never, StreamLossGrace: Never, MaxSessionLifetime: Never, RequestTimeout: Never, ProbeLead: Never}, nil},
		{"a short idle keeps the default probe lead", Lifetime{IdleTimeout: time.Minute}, []string{"probe_lead must be shorter than idle_timeout"}},
		{"probe lead not shorter than idle", Lifetime{IdleTimeout: time.Minute, ProbeLead: time.Minute}, []string{"probe_lead must be shorter than idle_timeout"}},
		{"streamless longer than idle", Lifetime{IdleTimeout: time.Hour, StreamlessIdleTimeout: 2 * time.Hour}, []string{"streamless_idle_timeout must not exceed idle_timeout"}},
		{"negative limits", Lifetime{MaxCallsPerSession: -1}, []string{"max_calls_per_session must not be negative"}},
		// With idle_timeout off no probe goes out and no session idles: the probe and streamless
		// settings have nothing to be shorter than.
		{"idle off, the default streamless limit", Lifetime{IdleTimeout: Never}, nil},
		{"idle off, any probe timings", Lifetime{IdleTimeout: Never, ProbeLead: time.Second, ProbeTimeout: time.Minute}, nil},
		{"probes off", Lifetime{ProbeLead: Never}, nil},
		{"probe timeout equal to the lead", Lifetime{IdleTimeout: time.Hour, ProbeLead: time.Minute, ProbeTimeout: time.Minute},
			[]string{"probe_timeout must be shorter than probe_lead"}},
		{"several at once", Lifetime{IdleTimeout: time.Minute, ProbeLead: time.Hour, StreamlessIdleTimeout: time.Hour, MaxCallsPerSession: -1},
			[]string{"probe_lead", "streamless_idle_timeout", "max_calls_per_session"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.l.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate() = nil")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != len(tt.want) {
				t.Errorf("%d problems reported, want %d: %v", n, len(tt.want), err)
			}
		})
	}
}

// Problems are listed in a stable order, the order of the settings' table.
func TestLifetimeValidateOrder(t *testing.T) {
	l := Lifetime{IdleTimeout: time.Minute, ProbeLead: 30 * time.Second, ProbeTimeout: time.Minute,
		StreamlessIdleTimeout: time.Hour, MaxCallsPerSession: -1}
	want := "probe_timeout must be shorter than probe_lead, or an unanswered ping could never decide\n" +
		"streamless_idle_timeout must not exceed idle_timeout\nmax_calls_per_session must not be negative"
	for range 20 { // a map's order would differ within a few runs
		if err := l.Validate(); err == nil || err.Error() != want {
			t.Fatalf("Validate() = %v, want\n%s", err, want)
		}
	}
}

// A partly filled Lifetime keeps the defaults of the fields it leaves out, and Never turns a
// rule off: what the reaper runs is exactly that.
func TestLifetimeDefaultsPerField(t *testing.T) {
	d := DefaultLifetime()
	tests := []struct {
		name string
		in   Lifetime
		want Lifetime
	}{
		{"zero is the default", Lifetime{}, d},
		{"one field set", Lifetime{RequestTimeout: time.Minute}, func() Lifetime { l := d; l.RequestTimeout = time.Minute; return l }()},
		{"one rule off", Lifetime{IdleTimeout: Never}, func() Lifetime { l := d; l.IdleTimeout = 0; return l }()},
		{"any negative is off", Lifetime{StreamLossGrace: -time.Hour, ProbeLead: Never}, func() Lifetime { l := d; l.StreamLossGrace, l.ProbeLead = 0, 0; return l }()},
		{"a ping always times out", Lifetime{ProbeTimeout: Never, Tick: -1}, d},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.WithDefaults(); got != tt.want {
				t.Errorf("WithDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
