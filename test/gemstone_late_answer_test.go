package test

import (
	"context"
	"testing"
	"time"
)

// TestGemStoneCallAfterATimedOutCallIsAnswered: a call that outlives request_timeout and then
// ends leaves the relay with the liveness pings gemgate sent after the timeout, the first given
// up on after 5 s (then SIGINT, which the relay ignores, and a second ping). The relay answers
// them all, in order, once the slow call ends. The client's next call, sent meanwhile, gets its
// own answer: the first ping's late answer is no corrupted answer (#51438) to fail the next
// call in line with.
func TestGemStoneCallAfterATimedOutCallIsAnswered(t *testing.T) {
	t.Parallel()
	needFake(t, "a call that outlives the request timeout and then ends")
	g := startGemStoneDev(t, map[string]any{"slow_first_call_ms": 9000}, "--request-timeout", "3s")
	s := ltOpen(t, g, g.Tokens["alice"], nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, _, _, err := s.call(ctx, "slow-1", "tools/call", map[string]any{"name": "status", "arguments": map[string]any{}})
	if err != nil || m.Error == nil || m.Error.Code != -32001 {
		t.Fatalf("the slow call: %+v %v; want the request timeout", m.Error, err)
	}
	ltWaitLog(t, g, "interrupting it", 10*time.Second) // the first ping was given up on; the second is sent
	m, _, _, err = s.call(ctx, "next-1", "tools/list", nil)
	if err != nil || m.Error != nil || len(m.Result) == 0 {
		t.Errorf("the call after the slow one: result %s, error %+v, %v; want its tools", m.Result, m.Error, err)
	}
}
