package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessionless"
)

// A parked call whose retry never comes is abandoned (input_required_timeout): its worker's
// question gets an error, and the call runs on at the worker, unseen. A worker may then ask
// again for that call (the askagain worker does). That question is the abandoned call's, or,
// with another call of the user's in flight, of one of two calls: never the other call's on a
// guess. It must not be parked as the input-required result of another request of the user's
// (another client: the person's IDE and an agent of theirs), whose "accept" would then confirm
// what the abandoned call asked; gemgate answers it itself.
func TestSessionlessAbandonedParkedCallsNextQuestionIsNotAnotherCalls(t *testing.T) {
	f := newFixture(t, perUserMode(t, "askagain"), func(o *Options) {
		o.InputRequiredTimeout = 3 * time.Second
	})
	c := f.client("alice-rw")
	r := c.sessionless("1", "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}, "_meta": elicitingMeta()})
	var res struct {
		ResultType string `json:"resultType"`
	}
	if m := r.only(t); m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.ResultType != "input_required" {
		t.Fatalf("ask: %d %s, want its first question as an input-required result", r.status, r.body)
	}
	// The user's other client calls slow, which is in flight when the ask call is abandoned.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan reply, 1)
	go func() {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
			"params": map[string]any{"name": "slow", "arguments": map[string]any{}, "_meta": elicitingMeta()}})
		r, _ := c.do(ctx, http.MethodPost, string(b), sessionless.HeaderProtocolVersion, sessionless.Version,
			sessionless.HeaderMethod, "tools/call", sessionless.HeaderName, "slow")
		got <- r
	}()
	waitLog(t, f, "askagain: slow")
	var slow reply
	select {
	case slow = <-got:
	case <-ctx.Done():
		t.Fatal("slow got no answer: the ask call's second question was answered by nobody")
	}
	if len(slow.msgs) != 1 {
		t.Fatalf("slow: %d %s", slow.status, slow.body)
	}
	m := slow.msgs[0]
	if m.Error == nil && json.Unmarshal(m.Result, &res) == nil && res.ResultType == "input_required" {
		t.Fatalf("the abandoned ask call's second question was parked as slow's input: %s", slow.body)
	}
	if got := toolText(t, m); !strings.Contains(got, `"cancel"`) {
		t.Errorf("the worker's second question was answered %q; want gemgate's cancel", got)
	}
}
