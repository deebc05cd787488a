package pool

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// progressCall sends a tools/call with a progress token, as the gateway hands one over.
func (s *session) progressCall(t *testing.T, token string, name string, args any) *Call {
	t.Helper()
	params, err := json.Marshal(map[string]any{"name": name, "arguments": args, "_meta": map[string]any{"progressToken": json.RawMessage(token)}})
	if err != nil {
		t.Fatal(err)
	}
	id := json.RawMessage(strconv.FormatInt(callSeq.Add(1), 10))
	c, err := s.m.Call(t.Context(), Request{Message: &jsonrpc.Message{ID: id, Method: "tools/call", Params: params},
		ProgressToken: json.RawMessage(token), Identity: s.id})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return c
}

// progressMapped reports whether the worker still maps c's worker-side token to c.
func progressMapped(c *Call) (wtoken string, mapped bool, total int) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.wtoken, c.w.progress[c.wtoken] == c, len(c.w.progress)
}

// progressDeliveries counts the notifications/progress delivered to c.
func (c *fakeCaller) progressDeliveries(t *testing.T) int {
	n := 0
	for _, m := range c.deliveries(t) {
		if m.Method == "notifications/progress" {
			n++
		}
	}
	return n
}

// TestFinishedCallsProgressTokenIsForgotten: on a worker shared by two sessions of a user, a
// call's worker-side progress token is mapped while the call runs and removed when it ends,
// answered or cancelled: the map does not grow with every call ever made, and a progress
// notification the worker sends later with a finished call's token reaches nobody.
func TestFinishedCallsProgressTokenIsForgotten(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Unix(1000, 0)))
	b := attach(t, p, "alice", false, `{}`, newCaller(time.Unix(1001, 0)))

	// Answered.
	held := a.progressCall(t, `"a-hold"`, "hold", map[string]any{})
	if tok, mapped, _ := progressMapped(held); tok == "" || !mapped {
		t.Fatalf("a running call's progress token is not mapped (worker token %q)", tok)
	}
	done := a.progressCall(t, `"a-1"`, "emit", map[string]any{"method": "notifications/x", "params": map[string]any{}})
	if got := answer(t, done); got != "emitted" {
		t.Fatalf("emit: %s", got)
	}
	oldTok, mapped, total := progressMapped(done)
	if mapped || total != 1 {
		t.Fatalf("after its answer, the call's token %q is still mapped: %v; %d tokens mapped, want 1 (the held call's)", oldTok, mapped, total)
	}

	// Cancelled.
	held.Cancel("test")
	eventually(t, "the cancelled call's progress token removed", func() bool {
		_, mapped, total := progressMapped(held)
		return !mapped && total == 0
	})

	// The worker sends progress under the finished call's token, during b's call: nobody gets it.
	late := b.tool(t, "emit", map[string]any{"method": "notifications/progress",
		"params": map[string]any{"progressToken": oldTok, "progress": 1}})
	if got := answer(t, late); got != "emitted" {
		t.Fatalf("emit: %s", got)
	}
	for name, c := range map[string]*fakeCaller{"a": a.c, "b": b.c} {
		if n := c.progressDeliveries(t); n != 0 {
			t.Errorf("member %s got %d progress notifications under a finished call's token", name, n)
		}
	}

	// And a live call's progress still arrives with its own token (the check above is not
	// passing because progress never arrives at all).
	live := a.progressCall(t, `"a-2"`, "hold", map[string]any{})
	liveTok, _, _ := progressMapped(live)
	emit := b.tool(t, "emit", map[string]any{"method": "notifications/progress",
		"params": map[string]any{"progressToken": liveTok, "progress": 1}})
	if got := answer(t, emit); got != "emitted" {
		t.Fatalf("emit: %s", got)
	}
	if n := a.c.progressDeliveries(t); n != 1 {
		t.Fatalf("the live call's member got %d progress notifications, want 1", n)
	}
	for _, m := range a.c.deliveries(t) {
		if m.Method == "notifications/progress" {
			var params struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			}
			if err := json.Unmarshal(m.Params, &params); err != nil || string(params.ProgressToken) != `"a-2"` {
				t.Errorf("progress delivered with token %s, want the client's own \"a-2\"", params.ProgressToken)
			}
		}
	}
	live.Cancel("test")
}
