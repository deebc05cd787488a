package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessions"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/policy"
)

func bareSession() *session {
	return &session{
		calls: map[string]*inflight{},
		hints: map[string]policy.Hints{}, outbox: wire.NewOutbox(nil, nil), lastActive: time.Now(),
	}
}

// The reaper decides on a snapshot; a request that arrives after the snapshot must win.
func TestReaperVerdictYieldsToALaterRequest(t *testing.T) {
	s := bareSession()
	st := s.state(time.Now())
	if !s.touch(time.Now()) {
		t.Fatal("touch refused on a live session")
	}
	if s.markEnding(st, sessions.ReasonIdle) {
		t.Fatal("the reaper claimed a session a request had revived after its snapshot")
	}

	st = s.state(time.Now())
	if _, err := s.startCall(json.RawMessage(`1`), true, false, 0); err != nil {
		t.Fatal(err)
	}
	if s.markEnding(st, sessions.ReasonIdle) {
		t.Fatal("the reaper claimed a session with a call in flight")
	}
	// Expiry depends on when the session opened alone: it is claimed, call and all.
	if !s.markEnding(st, sessions.ReasonExpired) {
		t.Fatal("the reaper did not claim an expired session with a call in flight")
	}
}

func TestAClaimedSessionRefusesRequests(t *testing.T) {
	s := bareSession()
	if !s.markEnding(s.state(time.Now()), sessions.ReasonIdle) {
		t.Fatal("an unchanged session should be claimable")
	}
	if s.touch(time.Now()) {
		t.Error("touch accepted a request on a session being ended")
	}
	if _, he := s.startCall(json.RawMessage(`2`), true, false, 0); he == nil || he.Status != http.StatusNotFound {
		t.Errorf("startCall = %v, want the 404 of a session not found", he)
	}
}

func TestCallsInFlightPerSessionAreCapped(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Lifetime = sessions.DefaultLifetime()
		o.Lifetime.MaxCallsPerSession = 2
	})
	c := f.client("alice-rw")
	c.open()
	done := make(chan reply, 2)
	for i := 0; i < 2; i++ {
		go func() { done <- c.callTool(strconv.Itoa(10+i), "slow", map[string]any{"seconds": 2}) }()
	}
	eventually(t, 5*time.Second, "two calls in flight", func() bool {
		s := c.sessionObj()
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.calls) == 2
	})
	r := c.callTool("12", "echo", map[string]any{"text": "third"})
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
		t.Fatalf("a third call: %d %s", r.status, r.body)
	}
	if m := r.only(t); string(m.ID) != "12" || !strings.Contains(rpcError(t, m).Message, "limit 2") {
		t.Errorf("refusal: %s", m.Encode())
	}
	for i := 0; i < 2; i++ {
		if r := <-done; r.status != http.StatusOK {
			t.Errorf("a call within the limit: %d", r.status)
		}
	}
	if r := c.callTool("13", "echo", map[string]any{"text": "again"}); r.status != http.StatusOK {
		t.Errorf("after the calls ended: %d %s", r.status, r.body)
	}
}
