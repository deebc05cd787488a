package pool

import (
	"testing"
	"time"
)

// logDeliveries are the notifications/message deliveries c got, with the call each names.
func (c *fakeCaller) logDeliveries(t *testing.T) []Delivery {
	t.Helper()
	msgs := c.deliveries(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Delivery
	for i, m := range msgs {
		if m.Method == "notifications/message" {
			out = append(out, c.got[i])
		}
	}
	return out
}

// TestLogLineGoesWithEachMembersOwnCall: a worker's log line (notifications/message) reaches
// every member of the worker, each with its own call at the worker when it has exactly one
// (so that the line rides that call's POST stream), and with no call (its session's stream)
// otherwise (a member whose one call is not the emitting one may get it either way). It never
// names another member's call: a member's session would put the line on
// another session's stream.
func TestLogLineGoesWithEachMembersOwnCall(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Unix(1000, 0)))
	b := attach(t, p, "alice", false, `{}`, newCaller(time.Unix(1001, 0)))
	idle := attach(t, p, "alice", false, `{}`, newCaller(time.Unix(1002, 0)))
	two := attach(t, p, "alice", false, `{}`, newCaller(time.Unix(1003, 0)))

	held := a.tool(t, "hold", map[string]any{})
	two1, two2 := two.tool(t, "hold", map[string]any{}), two.tool(t, "hold", map[string]any{})
	logCall := b.tool(t, "emit", map[string]any{"method": "notifications/message",
		"params": map[string]any{"level": "info", "logger": "t", "data": "line of b's call"}})
	if got := answer(t, logCall); got != "emitted" {
		t.Fatalf("emit: %s", got)
	}
	want := map[string]struct {
		s    *session
		call *Call
	}{
		"b (the emitting call's member)": {b, logCall},
		"a (one other call in flight)":   {a, held},
		"idle (no call)":                 {idle, nil},
		"two (two calls in flight)":      {two, nil},
	}
	whose := func(c *Call) string {
		if c == nil {
			return "no call"
		}
		for name, w := range want {
			if c.m == w.s.m {
				return "a call of member " + name
			}
		}
		return "an unknown call"
	}
	for name, w := range want {
		ds := w.s.c.logDeliveries(t)
		if len(ds) != 1 {
			t.Errorf("member %s got the log line %d times, want once", name, len(ds))
			continue
		}
		got := ds[0].Call
		if w.s == a && got == nil {
			continue // the line is not a's call's: its session's stream is as good
		}
		if got != w.call {
			t.Errorf("member %s got the log line with %s, want %s: a log line goes with the member's own sole call, never another's", name, whose(got), whose(w.call))
		}
	}
	for _, c := range []*Call{held, two1, two2} {
		c.Cancel("test")
	}
}
