package gateway

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gemgate/gemgate/gateway/sessions"
)

// max_session_lifetime ends a session with a call in flight too, through the reaper (its
// verdict and its claim of the session): a client that always has a call in flight does not
// keep its session, and the worker's login as the user, past the cap.
func TestMaxLifetimeEndsABusySession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const max = 2 * time.Hour
		def := sessions.DefaultLifetime()
		b := newBubble(t, sessions.Lifetime{MaxSessionLifetime: max, IdleTimeout: sessions.Never, StreamlessIdleTimeout: sessions.Never,
			StreamLossGrace: def.StreamLossGrace, ProbeLead: sessions.Never, ProbeTimeout: def.ProbeTimeout})
		s := b.open(t)
		if _, err := s.startCall(json.RawMessage(`1`), false, false, 0); err != nil {
			t.Fatal(err)
		}
		b.at(max + time.Minute)
		if b.alive(s) {
			t.Fatalf("a session with a call in flight is still open at +%v, past max_session_lifetime %v", time.Since(b.start), max)
		}
	})
}
