package pool

import (
	"strings"
	"testing"
	"time"
)

// record asks the scripted worker what subscribe, unsubscribe and setLevel requests reached it.
func record(t *testing.T, s *session) string {
	t.Helper()
	return answer(t, s.tool(t, "record", map[string]any{}))
}

// notified is how many notifications of method c was delivered.
func notified(t *testing.T, c *fakeCaller, method string) int {
	t.Helper()
	n := 0
	for _, m := range c.deliveries(t) {
		if m.Method == method {
			n++
		}
	}
	return n
}

// resources/subscribe and unsubscribe are reference counted across one worker's callers: the
// worker hears the first subscribe and the last unsubscribe of a URI (a caller's detach
// included), and resources/updated reaches only the callers that subscribed to that URI.
func TestSubscriptionsAreCountedAcrossCallers(t *testing.T) {
	p := newTestPool(t, Settings{})
	a, b, c, d := attach(t, p, "alice", false, `{}`, newCaller(time.Time{})), attach(t, p, "alice", false, `{}`, newCaller(time.Time{})),
		attach(t, p, "alice", false, `{}`, newCaller(time.Time{})), attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	sub := func(s *session, method, uri string) {
		t.Helper()
		call, err := s.call(t, method, map[string]string{"uri": uri})
		if err != nil {
			t.Fatal(err)
		}
		if got := answer(t, call); got != `{}` {
			t.Fatalf("%s %s: %s", method, uri, got)
		}
	}
	sub(a, "resources/subscribe", "u1")
	sub(b, "resources/subscribe", "u1")
	answer(t, d.tool(t, "emit", map[string]any{"method": "notifications/resources/updated", "params": map[string]string{"uri": "u1"}}))
	for name, want := range map[*session]int{a: 1, b: 1, c: 0, d: 0} {
		if n := notified(t, name.c, "notifications/resources/updated"); n != want {
			t.Errorf("session %s got %d resources/updated, want %d", name.id.Session, n, want)
		}
	}
	sub(a, "resources/unsubscribe", "u1")
	if got := record(t, d); got != "subscribe u1" {
		t.Errorf("after one of two unsubscribes the worker heard %q", got)
	}
	sub(b, "resources/unsubscribe", "u1")
	sub(a, "resources/subscribe", "u2")
	sub(c, "resources/subscribe", "u2")
	c.m.Detach()
	if got := record(t, d); got != "subscribe u1,unsubscribe u1,subscribe u2" {
		t.Errorf("the worker heard %q", got)
	}
	a.m.Detach() // the last subscriber of u2 goes: gemgate unsubscribes on its behalf
	want := "subscribe u1,unsubscribe u1,subscribe u2,unsubscribe u2"
	eventually(t, "the worker hears the last unsubscribe", func() bool { return record(t, d) == want })
}

// logging/setLevel sets the worker to the most verbose level any caller asked for, and each
// caller gets only the messages at or above its own level (all of them if it set none).
func TestLoggingLevelIsTheMostVerboseAsked(t *testing.T) {
	p := newTestPool(t, Settings{})
	errs, debug, info, none := attach(t, p, "alice", false, `{}`, newCaller(time.Time{})), attach(t, p, "alice", false, `{}`, newCaller(time.Time{})),
		attach(t, p, "alice", false, `{}`, newCaller(time.Time{})), attach(t, p, "alice", false, `{}`, newCaller(time.Time{}))
	for _, step := range []struct {
		s     *session
		level string
		heard string // what the worker has heard after this step
	}{
		{errs, "error", "setLevel error"},
		{debug, "debug", "setLevel error,setLevel debug"},
		{info, "info", "setLevel error,setLevel debug"}, // debug already covers it
	} {
		call, err := step.s.call(t, "logging/setLevel", map[string]string{"level": step.level})
		if err != nil {
			t.Fatal(err)
		}
		if got := answer(t, call); got != `{}` {
			t.Fatalf("setLevel %s: %s", step.level, got)
		}
		if got := record(t, none); got != step.heard {
			t.Errorf("after %s the worker heard %q, want %q", step.level, got, step.heard)
		}
	}
	for _, level := range []string{"info", "critical"} {
		answer(t, none.tool(t, "emit", map[string]any{"method": "notifications/message", "params": map[string]any{"level": level, "data": "x"}}))
	}
	levels := func(c *fakeCaller) string {
		var out []string
		for _, m := range c.deliveries(t) {
			if m.Method == "notifications/message" {
				out = append(out, levelName(m.Params))
			}
		}
		return strings.Join(out, ",")
	}
	for s, want := range map[*session]string{errs: "critical", debug: "info,critical", info: "info,critical", none: "info,critical"} {
		if got := levels(s.c); got != want {
			t.Errorf("session %s got messages %q, want %q", s.id.Session, got, want)
		}
	}
}
