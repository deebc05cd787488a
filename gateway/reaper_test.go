package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessions"
)

func tinyLifetime(mod func(*sessions.Lifetime)) func(*Options) {
	return func(o *Options) {
		o.Lifetime = sessions.Lifetime{
			IdleTimeout:           10 * time.Second,
			StreamlessIdleTimeout: 300 * time.Millisecond,
			StreamLossGrace:       300 * time.Millisecond,
			ProbeLead:             sessions.Never,
			ProbeTimeout:          10 * time.Second,
			Tick:                  20 * time.Millisecond,
		}
		if mod != nil {
			mod(&o.Lifetime)
		}
	}
}

// sessionEnded waits for the fixture's only session to end and checks how.
func sessionEnded(t *testing.T, f *fixture, pid int, reason string, within time.Duration) {
	t.Helper()
	eventually(t, within, "the session to be reaped", func() bool { return f.gw.Sessions() == 0 })
	eventually(t, 2*time.Second, "the worker to exit", func() bool { return !alive(pid) })
	// The session leaves the table before its end is counted and logged.
	if n := waitMetric(t, f, 1, "gemgate_sessions_closed_total", "reason", reason); n != 1 {
		t.Errorf("sessions_closed_total{reason=%q} = %v, want 1; log:\n%s", reason, n, endLines(t, f))
	}
	eventually(t, 2*time.Second, "a \"session ended\" log line with reason, user and session", func() bool {
		for _, rec := range f.log.records(t) {
			if rec["msg"] == "session ended" && rec["reason"] == reason && rec["user"] == "alice" && rec["session"] != "" {
				return true
			}
		}
		return false
	})
}

func TestReaperEndsStreamlessSession(t *testing.T) {
	f := newFixture(t, tinyLifetime(nil))
	c := f.client("alice-rw")
	c.open()
	s := c.sessionObj()
	pid := s.member.WorkerPid()
	// The idle clock runs from the session's last activity (open's notifications/initialized),
	// which a loaded machine may put well before open returns.
	last := s.LastActive()
	sessionEnded(t, f, pid, sessions.ReasonStreamlessIdle, 5*time.Second)
	if d := time.Since(last); d < 300*time.Millisecond {
		t.Errorf("reaped %v after the session's last activity, before streamless_idle_timeout (300ms)", d)
	}
}

func TestReaperEndsSessionWhoseStreamWasLost(t *testing.T) {
	f := newFixture(t, tinyLifetime(nil))
	c := f.client("alice-rw")
	c.open()
	pid := c.sessionObj().member.WorkerPid()
	st := c.openStream()
	time.Sleep(500 * time.Millisecond) // past the streamless limit: an open stream keeps it
	if f.gw.Sessions() != 1 {
		t.Fatal("a session with an open stream was reaped")
	}
	st.cancel()
	sessionEnded(t, f, pid, sessions.ReasonStreamLost, 5*time.Second)
}

func TestReaperProbes(t *testing.T) {
	for _, answer := range []bool{true, false} {
		t.Run(map[bool]string{true: "answered", false: "unanswered"}[answer], func(t *testing.T) {
			t.Parallel()
			// The ping goes out idle-lead (2.5s) into idleness, and the answered session ends
			// lead (1.5s) after the answer; had the answer refreshed the idle clock, it would
			// end idle (4s) after it. The bound below sits between the two, a second and more
			// from each, so a loaded machine cannot blur them. The exact instants are pinned
			// under synctest (reaper_synctest_test.go).
			const idle, lead = 4 * time.Second, 1500 * time.Millisecond
			f := newFixture(t, tinyLifetime(func(l *sessions.Lifetime) {
				l.IdleTimeout, l.StreamlessIdleTimeout, l.ProbeLead = idle, idle, lead
				l.ProbeTimeout = 300 * time.Millisecond
				if answer {
					l.ProbeTimeout = time.Second // room for a loaded machine; still below the idle deadline
				}
			}))
			c := f.client("alice-rw")
			c.open()
			pid := c.sessionObj().member.WorkerPid()
			st := c.openStream()
			var ping *struct{ id json.RawMessage }
			for ping == nil {
				m, ok := st.next(10 * time.Second)
				if !ok {
					t.Fatal("no liveness ping on the stream")
				}
				if m.Method == "ping" && m.IsRequest() {
					ping = &struct{ id json.RawMessage }{m.ID}
				}
			}
			if !strings.HasPrefix(string(ping.id), `"gemgate-`) {
				t.Errorf("probe id %s is not in the gateway's namespace", ping.id)
			}
			if !answer {
				sessionEnded(t, f, pid, sessions.ReasonProbeFailed, 10*time.Second)
				return
			}
			answered := time.Now()
			if r := c.post(`{"jsonrpc":"2.0","id":` + string(ping.id) + `,"result":{}}`); r.status != 202 {
				t.Fatalf("answer to the ping: %d", r.status)
			}
			sessionEnded(t, f, pid, sessions.ReasonIdle, 2*idle)
			if d := time.Since(answered); d > (lead+idle)/2 {
				t.Errorf("session lived %v after the answered ping: the answer extended idleness", d)
			}
		})
	}
}

func endLines(t *testing.T, f *fixture) string {
	var b strings.Builder
	for _, rec := range f.log.records(t) {
		if rec["msg"] == "session ended" {
			fmt.Fprintln(&b, rec)
		}
	}
	return b.String()
}
