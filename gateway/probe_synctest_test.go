package gateway

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gemgate/gemgate/gateway/sessions"
	"github.com/gemgate/gemgate/jsonrpc"
)

// TestOnlyTheCurrentPingIsAnswered: of the liveness pings a session sent, only the latest,
// unanswered, since the last activity, takes an answer that does not count as activity. A
// ping written to a superseded stream, one answered already, and one sent before a request
// came decide nothing: their answers are ordinary responses (and so activity).
func TestOnlyTheCurrentPingIsAnswered(t *testing.T) {
	def := sessions.DefaultLifetime() // idle 30m, probe lead 5m, probe timeout 30s; ticks every 500ms
	due := def.IdleTimeout - def.ProbeLead
	answer := func(id json.RawMessage) *jsonrpc.Message {
		return &jsonrpc.Message{ID: id, Result: json.RawMessage(`{}`)}
	}
	onePing := func(t *testing.T, s *session, gen uint64) json.RawMessage {
		t.Helper()
		ps := pings(t, s, gen)
		if len(ps) != 1 {
			t.Fatalf("%d pings on stream %d, want 1", len(ps), gen)
		}
		return ps[0].ID
	}

	t.Run("superseded stream, then answered twice", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newBubble(t, sessions.Lifetime{})
			s := b.open(t)
			first := openStream(s)
			b.at(due)
			old := onePing(t, s, first)
			b.at(due + time.Second)
			second := openStream(s) // the client's new stream supersedes the first
			closeStream(s)
			b.at(due + 2*time.Second) // the next tick pings the new stream
			cur := onePing(t, s, second)
			if s.isProbeAnswer(answer(old)) {
				t.Errorf("the answer to ping %s, written to a superseded stream, is taken as a probe answer", old)
			}
			if !s.isProbeAnswer(answer(cur)) {
				t.Fatalf("the answer to the current ping %s is not taken as a probe answer", cur)
			}
			if err := s.clientResponse(answer(cur), false); err != nil {
				t.Fatal(err)
			}
			if s.isProbeAnswer(answer(cur)) {
				t.Errorf("a second answer to ping %s is taken as a probe answer", cur)
			}
			b.at(def.IdleTimeout - time.Nanosecond)
			if !b.alive(s) {
				t.Fatal("the session ended before idle_timeout although its current ping was answered")
			}
			b.at(def.IdleTimeout)
			b.ended(t, s, sessions.ReasonIdle, def.IdleTimeout)
		})
	})

	t.Run("activity voids the ping", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newBubble(t, sessions.Lifetime{})
			s := b.open(t)
			gen := openStream(s)
			b.at(due)
			id := onePing(t, s, gen)
			b.at(due + time.Second)
			if !s.touch(time.Now()) {
				t.Fatal("touch refused on a live session")
			}
			if s.isProbeAnswer(answer(id)) {
				t.Errorf("the answer to ping %s, sent before the last request, is taken as a probe answer", id)
			}
		})
	})
}
