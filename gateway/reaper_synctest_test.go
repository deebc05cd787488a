package gateway

// The reaper's rules at their exact instants, in testing/synctest bubbles: the gateway, its
// reaper goroutine and ticker run on the bubble's fake clock, so a 30-minute idle timeout
// takes microseconds and the instant a session ends is known to the nanosecond.
//
// The seam is a session without a worker: built as initialize builds one, but attached to
// a zero pool.Member (Detach is then a no-op), because a real worker's pipes are not
// durably blocking and would stall the fake clock. What a session's end does to its worker
// stays pinned by the real-time tests (reaper_test.go here, test/lifetime_reaper_test.go).

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gemgate/gemgate/gateway/metrics"
	"github.com/gemgate/gemgate/gateway/sessions"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/worker"
)

// bubble is a gateway made inside a synctest bubble, logging into a buffer.
type bubble struct {
	gw    *Gateway
	log   *logBuffer
	reg   *prometheus.Registry
	start time.Time // the bubble's clock when the gateway (and its reaper's ticker) started
}

// newBubble builds a gateway with the lifetime l (zero fields keep DefaultLifetime's
// values, so a rule can be read against the shipped defaults). Call it inside synctest.Test.
func newBubble(t *testing.T, l sessions.Lifetime) *bubble {
	t.Helper()
	pol, err := policy.New(policy.Config{ReadOnlyTools: demoReadOnlyTools})
	if err != nil {
		t.Fatal(err)
	}
	b := &bubble{log: &logBuffer{}, reg: prometheus.NewRegistry()}
	b.gw, err = New(Options{
		Authenticate: func(h http.Handler) http.Handler { return h },
		Policy:       pol,
		Workers:      noLauncher{},
		Logger:       slog.New(slog.NewJSONHandler(b.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Metrics:      metrics.New(b.reg),
		Lifetime:     l,
	})
	if err != nil {
		t.Fatal(err)
	}
	b.start = time.Now()
	t.Cleanup(func() { b.gw.BeginShutdown(); b.gw.Close() }) // inside the bubble: every goroutine ends
	return b
}

// noLauncher starts nothing: the sessions of a bubble have no worker.
type noLauncher struct{}

func (noLauncher) Launch(context.Context, worker.Identity) (worker.Launch, error) {
	return worker.Launch{}, errors.New("no workers in a synctest bubble")
}

// open adds a session as a successful initialize leaves it, answered now.
func (b *bubble) open(t *testing.T) *session {
	t.Helper()
	o := owner{testIssuer, "sub-alice"}
	if err := b.gw.sessions.Reserve(o); err != nil {
		t.Fatal(err)
	}
	s := &session{
		id: newSessionID(), owner: o, opened: time.Now(), member: &pool.Member{},
		calls: map[string]*inflight{}, hints: map[string]policy.Hints{}, done: make(chan struct{}),
	}
	s.lastActive = s.opened
	s.log = b.gw.log.With("session", s.id, "user", "alice")
	s.outbox = wire.NewOutbox(nil, nil)
	s.end = func(reason string) { b.gw.endSession(s, reason) }
	if reason := b.gw.admit(s); reason != "" {
		t.Fatalf("the gateway refused the session: %s", reason)
	}
	return s
}

// openStream and closeStream do what the GET stream handler does around a stream.
func openStream(s *session) (gen uint64) {
	gen = s.outbox.Attach()
	s.streamOpened()
	return gen
}

func closeStream(s *session) {
	s.outbox.Detach()
	s.streamClosed(time.Now())
}

// at sleeps until the bubble's clock reads b.start+d and lets every goroutine that time
// woke (the reaper's pass, a session's end) finish.
func (b *bubble) at(d time.Duration) {
	if wait := time.Until(b.start.Add(d)); wait > 0 {
		time.Sleep(wait)
	}
	synctest.Wait()
}

// alive reports whether s is still in the session table.
func (b *bubble) alive(s *session) bool { return b.gw.sessions.Lookup(s.id, s.owner) != nil }

// ended checks that s ended for reason after exactly lifetime, in the log and the metric.
func (b *bubble) ended(t *testing.T, s *session, reason string, lifetime time.Duration) {
	t.Helper()
	if b.alive(s) {
		t.Fatalf("session still open at +%v, want it ended (%s)", time.Since(b.start), reason)
	}
	var found bool
	for _, rec := range b.log.records(t) {
		if rec["msg"] == "session ended" && rec["session"] == s.id {
			found = true
			// The JSON log writes a duration in nanoseconds.
			if got, _ := rec["lifetime"].(float64); rec["reason"] != reason || time.Duration(got) != lifetime {
				t.Errorf("session ended with reason %v after %v, want %s after exactly %v", rec["reason"], time.Duration(got), reason, lifetime)
			}
		}
	}
	if !found {
		t.Errorf("no \"session ended\" log line for the session; log:\n%s", b.log)
	}
	if n := gathered(t, b.reg, "gemgate_sessions_closed_total", "reason", reason); n != 1 {
		t.Errorf("sessions_closed_total{reason=%q} = %v, want 1", reason, n)
	}
}

// pings are the liveness probes waiting in s's outbox for stream gen.
func pings(t *testing.T, s *session, gen uint64) []*jsonrpc.Message {
	t.Helper()
	msgs, _, _ := outboxTake(s.outbox, gen)
	var out []*jsonrpc.Message
	for _, raw := range msgs {
		m, err := jsonrpc.Parse(raw, jsonrpc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if m.Method == "ping" {
			out = append(out, m)
		}
	}
	return out
}

// TestReaperInstants: each rule of the lifetime policy ends a session at the first reaper
// tick at or past its deadline, and not a tick earlier. Ticks fall every 500ms from the
// gateway's start and the deadlines here are whole seconds, so each end is exact.
func TestReaperInstants(t *testing.T) {
	const before = time.Nanosecond    // "just before the deadline"
	def := sessions.DefaultLifetime() // streamless 1m, idle 30m, stream loss 10s, probe lead 5m, probe timeout 30s

	t.Run("streamless idle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newBubble(t, sessions.Lifetime{})
			s := b.open(t)
			b.at(def.StreamlessIdleTimeout - before)
			if !b.alive(s) {
				t.Fatalf("a streamless session ended before streamless_idle_timeout %v", def.StreamlessIdleTimeout)
			}
			b.at(def.StreamlessIdleTimeout)
			b.ended(t, s, sessions.ReasonStreamlessIdle, def.StreamlessIdleTimeout)
		})
	})

	t.Run("idleness counts from the last request", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newBubble(t, sessions.Lifetime{})
			s := b.open(t)
			b.at(40 * time.Second)
			if !s.touch(time.Now()) {
				t.Fatal("touch refused on a live session")
			}
			b.at(40*time.Second + def.StreamlessIdleTimeout - before)
			if !b.alive(s) {
				t.Fatal("a request did not restart the idle clock")
			}
			b.at(40*time.Second + def.StreamlessIdleTimeout)
			b.ended(t, s, sessions.ReasonStreamlessIdle, 40*time.Second+def.StreamlessIdleTimeout)
		})
	})

	t.Run("a call in flight is never reaped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newBubble(t, sessions.Lifetime{})
			s := b.open(t)
			inf, err := s.startCall(json.RawMessage(`1`), true, false, 0)
			if err != nil {
				t.Fatal(err)
			}
			b.at(10 * def.StreamlessIdleTimeout)
			if !b.alive(s) {
				t.Fatal("a session with a call in flight was reaped")
			}
			s.endCall(inf) // the answer is activity: the idle clock starts again now
			b.at(10*def.StreamlessIdleTimeout + def.StreamlessIdleTimeout - before)
			if !b.alive(s) {
				t.Fatal("the session ended before streamless_idle_timeout after its call ended")
			}
			b.at(10*def.StreamlessIdleTimeout + def.StreamlessIdleTimeout)
			b.ended(t, s, sessions.ReasonStreamlessIdle, 11*def.StreamlessIdleTimeout)
		})
	})

	t.Run("stream lost", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newBubble(t, sessions.Lifetime{})
			s := b.open(t)
			openStream(s)
			b.at(5 * def.StreamlessIdleTimeout)
			if !b.alive(s) {
				t.Fatal("a session with an open stream ended at streamless_idle_timeout")
			}
			closeStream(s)
			lost := 5 * def.StreamlessIdleTimeout
			b.at(lost + def.StreamLossGrace - before)
			if !b.alive(s) {
				t.Fatalf("the session ended within stream_loss_grace %v", def.StreamLossGrace)
			}
			b.at(lost + def.StreamLossGrace)
			b.ended(t, s, sessions.ReasonStreamLost, lost+def.StreamLossGrace)
		})
	})

	t.Run("a new stream within the grace keeps the session", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newBubble(t, sessions.Lifetime{})
			s := b.open(t)
			openStream(s)
			closeStream(s)
			b.at(def.StreamLossGrace - time.Second)
			openStream(s)
			b.at(10 * def.StreamLossGrace)
			if !b.alive(s) {
				t.Fatal("the session ended although its client opened a new stream within the grace")
			}
		})
	})

	t.Run("probe unanswered", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newBubble(t, sessions.Lifetime{})
			s := b.open(t)
			gen := openStream(s)
			due := def.IdleTimeout - def.ProbeLead
			b.at(due - before)
			if n := len(pings(t, s, gen)); n != 0 {
				t.Fatalf("%d pings before idle_timeout - probe_lead", n)
			}
			b.at(due)
			if n := len(pings(t, s, gen)); n != 1 {
				t.Fatalf("%d pings at idle_timeout - probe_lead, want 1", n)
			}
			b.at(due + def.ProbeTimeout - before)
			if !b.alive(s) {
				t.Fatalf("the session ended before probe_timeout %v", def.ProbeTimeout)
			}
			b.at(due + def.ProbeTimeout)
			b.ended(t, s, sessions.ReasonProbeFailed, due+def.ProbeTimeout)
		})
	})

	t.Run("probe answered: idle at idle_timeout, not later", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newBubble(t, sessions.Lifetime{})
			s := b.open(t)
			gen := openStream(s)
			b.at(def.IdleTimeout - def.ProbeLead)
			ps := pings(t, s, gen)
			if len(ps) != 1 {
				t.Fatalf("%d pings at idle_timeout - probe_lead, want 1", len(ps))
			}
			b.at(def.IdleTimeout - def.ProbeLead + time.Second)
			answer := &jsonrpc.Message{ID: ps[0].ID, Result: json.RawMessage(`{}`)}
			if !s.isProbeAnswer(answer) {
				t.Fatalf("the answer to ping %s is not recognised as a probe answer", ps[0].ID)
			}
			s.clientResponse(answer, false) // what a POSTed answer does: no touch, the idle clock runs on
			b.at(def.IdleTimeout - before)
			if !b.alive(s) {
				t.Fatal("a session whose client answered the probe ended before idle_timeout")
			}
			if n := len(pings(t, s, gen)); n != 0 {
				t.Errorf("%d more pings after the answered one", n)
			}
			b.at(def.IdleTimeout)
			b.ended(t, s, sessions.ReasonIdle, def.IdleTimeout)
		})
	})

	t.Run("max session lifetime", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const max = 2 * time.Hour
			b := newBubble(t, sessions.Lifetime{MaxSessionLifetime: max, IdleTimeout: def.IdleTimeout, StreamlessIdleTimeout: def.StreamlessIdleTimeout,
				StreamLossGrace: def.StreamLossGrace, ProbeLead: def.ProbeLead, ProbeTimeout: def.ProbeTimeout})
			s := b.open(t)
			openStream(s)
			for d := time.Minute; d < max; d += 10 * time.Minute { // a busy client, never idle
				b.at(d)
				if !s.touch(time.Now()) {
					t.Fatalf("the session ended at +%v, before max_session_lifetime %v", d, max)
				}
			}
			b.at(max - before)
			if !b.alive(s) {
				t.Fatal("the session ended before max_session_lifetime")
			}
			b.at(max)
			b.ended(t, s, sessions.ReasonExpired, max)
		})
	})
}

// The tick, not the deadline, sets how late a session may end: with a 7s tick a 1m
// streamless limit is noticed at the first tick past it, 63s.
func TestReaperEndsAtTheFirstTickPastTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := sessions.DefaultLifetime()
		l.Tick = 7 * time.Second
		b := newBubble(t, l)
		s := b.open(t)
		want := (l.StreamlessIdleTimeout/l.Tick + 1) * l.Tick
		b.at(want - time.Nanosecond)
		if !b.alive(s) {
			t.Fatalf("the session ended before the tick at +%v", want)
		}
		b.at(want)
		b.ended(t, s, sessions.ReasonStreamlessIdle, want)
	})
}
