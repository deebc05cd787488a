package test

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestPerUserSameIDsAndProgressTokens: two sessions of one user, on one worker, send the same
// JSON-RPC id (7) and the same progress token (1) at the same time. Each sees only its own
// progress (told apart by its total) and its own answer; session A cancels its call, which
// stops only A's (the worker logs one "slow: cancelled"), and B's call runs to its end.
func TestPerUserSameIDsAndProgressTokens(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := ltOpen(t, g, g.Tokens["alice"], nil)
	b := ltOpen(t, g, g.Tokens["alice"], nil)
	if pa, _ := puOpened(t, g, a.id); pa != g.workerPID(t, b.id) {
		t.Fatalf("the two sessions are not on one worker")
	}
	slow := func(seconds int) map[string]any {
		return map[string]any{"name": "slow", "arguments": map[string]any{"seconds": seconds, "progress": true},
			"_meta": map[string]any{"progressToken": 1}}
	}
	const aSeconds, bSeconds = 60, 4
	chA := puPost(ctx, a, 7, "tools/call", slow(aSeconds))
	chB := puPost(ctx, b, 7, "tools/call", slow(bSeconds))

	// progressOf checks one progress notification belongs to the session whose call runs
	// `total` seconds and carries that session's own token.
	progressOf := func(who string, m ltMsg, total float64) {
		t.Helper()
		var p struct {
			Token json.RawMessage `json:"progressToken"`
			Total float64         `json:"total"`
		}
		if m.Method != "notifications/progress" || json.Unmarshal(m.Params, &p) != nil {
			t.Errorf("%s got %s %s, want only its progress", who, m.Method, m.Params)
			return
		}
		if string(p.Token) != "1" || p.Total != total {
			t.Errorf("%s got progress %s, want token 1 and total %v (its own call)", who, m.Params, total)
		}
	}
	// A's first progress proves its call runs; then A cancels it.
	first := ltNext(t, chA, 20*time.Second, "A's first progress", func(ltMsg) bool { return true })
	progressOf("A", first, aSeconds)
	if code := a.notify("notifications/cancelled", map[string]any{"requestId": 7, "reason": "test"}); code != 202 {
		t.Fatalf("A's notifications/cancelled: status %d", code)
	}
	ltWaitLog(t, g, "slow: cancelled", 20*time.Second)

	answer, before, ok := puAnswer(t, chB, 30*time.Second)
	if !ok || answer.Error != nil || string(answer.ID) != "7" || puField(string(answer.Result), "text") != "slow: done after 4 seconds" {
		t.Errorf("B's call: answered %t, id %s, result %s, error %+v; want its own completed slow call", ok, answer.ID, answer.Result, answer.Error)
	}
	if len(before) != bSeconds {
		t.Errorf("B got %d messages before its answer, want its %d progress notifications", len(before), bSeconds)
	}
	for _, m := range before {
		progressOf("B", m, bSeconds)
	}
	// A's response ends without a result (a cancelled call is not answered); whatever it
	// carried is A's own.
	for m := range chA {
		if m.Method == "" {
			if m.Result != nil {
				t.Errorf("A's cancelled call was answered with a result: %s", m.Result)
			}
			continue
		}
		progressOf("A", m, aSeconds)
	}
	puWaitStarted(t, g, "slow: cancelled", 1, 10*time.Second) // the worker's stderr reaches the log through two pipes
	if n := puCount(g, "slow: cancelled"); n != 1 {
		t.Errorf("the worker cancelled %d slow calls, want only A's", n)
	}
	// Both sessions go on.
	for _, s := range []*ltRaw{a, b} {
		if got := puField(string(s.tool("echo", map[string]any{"text": "after"})), "text"); got != "after" {
			t.Errorf("echo after the cancel answered %q", got)
		}
	}
}
