package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessions"
)

// How the lifetime settings become the gateway's Lifetime, and the probe rule derived from
// idle_timeout (docs/session-lifetime.md, "Liveness probing"): the ping goes out five minutes
// before the idle deadline, or a sixth of idle_timeout before it when idle_timeout is five
// minutes or less; a ping unanswered for 30 s is a verdict, or for a quarter of the lead when
// the lead is 30 s or less, so the verdict lands before the idle deadline even with the ping
// leaving a reaper tick late and the verdict landing a tick late.
func TestConfigLifetime(t *testing.T) {
	tests := []struct {
		idle              time.Duration
		wantLead, wantOut time.Duration
	}{
		{30 * time.Minute, 5 * time.Minute, 30 * time.Second},
		{6 * time.Minute, 5 * time.Minute, 30 * time.Second},
		{5 * time.Minute, 50 * time.Second, 30 * time.Second},
		{3 * time.Minute, 30 * time.Second, 7500 * time.Millisecond},
		{12 * time.Second, 2 * time.Second, 500 * time.Millisecond},
		{0, 5 * time.Minute, 30 * time.Second}, // idle off: the probe never comes due
	}
	for _, tt := range tests {
		c := defaults()
		c.IdleTimeout = tt.idle
		l := c.lifetime()
		wantIdle := tt.idle
		if wantIdle == 0 {
			wantIdle = sessions.Never
		}
		if l.IdleTimeout != wantIdle || l.ProbeLead != tt.wantLead || l.ProbeTimeout != tt.wantOut {
			t.Errorf("idle_timeout %v: idle %v, probe lead %v, probe timeout %v; want %v, %v, %v",
				tt.idle, l.IdleTimeout, l.ProbeLead, l.ProbeTimeout, wantIdle, tt.wantLead, tt.wantOut)
		}
		if tt.idle > 0 && l.ProbeLead+l.ProbeTimeout+2*l.Tick >= tt.idle {
			t.Errorf("idle_timeout %v: a probe going out a tick late could not decide before the idle deadline", tt.idle)
		}
	}

	c := defaults()
	c.StreamlessIdle, c.StreamLossGrace, c.MaxSessionLifetime, c.RequestTimeout = 2*time.Minute, 3*time.Second, time.Hour, 9*time.Second
	c.MaxCallsPerSession = 7
	l := c.lifetime()
	if l.StreamlessIdleTimeout != 2*time.Minute || l.StreamLossGrace != 3*time.Second || l.MaxSessionLifetime != time.Hour ||
		l.RequestTimeout != 9*time.Second || l.MaxCallsPerSession != 7 {
		t.Errorf("settings not carried into the lifetime: %+v", l)
	}

	// 0 in the configuration turns a rule off; the gateway's zero would mean its default.
	c = defaults()
	c.IdleTimeout, c.StreamlessIdle, c.StreamLossGrace, c.MaxSessionLifetime, c.RequestTimeout = 0, 0, 0, 0, 0
	l = c.lifetime()
	for name, d := range map[string]time.Duration{"idle": l.IdleTimeout, "streamless": l.StreamlessIdleTimeout,
		"grace": l.StreamLossGrace, "max lifetime": l.MaxSessionLifetime, "request": l.RequestTimeout} {
		if d != sessions.Never {
			t.Errorf("%s: 0 in the configuration became %v, want sessions.Never", name, d)
		}
	}

	c = defaults()
	c.IdleTimeout, c.RequestTimeout = -time.Second, -time.Second
	err := errors.Join(c.validate()...)
	for _, want := range []string{"idle_timeout: must not be negative", "request_timeout: must not be negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate() = %v, want it to say %q", err, want)
		}
	}
}
