package pool

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A call parked for its client's input (the 2026-07-28 bridge: Waiting) does not count as one
// that can ask: the worker's question during the only other call goes to that call, instead
// of being ambiguous and answered by gemgate. Taken up again, the parked call counts again.
func TestWaitingCallDoesNotMakeQuestionsAmbiguous(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	asker := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now().Add(-time.Hour)))
	parked := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now()))
	held := parked.tool(t, "hold", nil)
	defer held.Cancel("test over")

	held.Waiting(true)
	c := asker.tool(t, "ask", map[string]any{"method": "elicitation/create"})
	_, req := asker.c.request(t)
	if _, err := asker.m.Answer(&jsonrpc.Message{ID: req.ID, Result: json.RawMessage(`{"action":"decline"}`)}, false); err != nil {
		t.Fatal(err)
	}
	if got := answer(t, c); !strings.Contains(got, `"decline"`) {
		t.Errorf("with the other call parked, the question was answered %s; want the asking call's decline", got)
	}

	held.Waiting(false)
	c = asker.tool(t, "ask", map[string]any{"method": "elicitation/create"})
	if got := answer(t, c); got != `{"action":"cancel"}` {
		t.Errorf("with the other call taken up again, the question was answered %s; want gemgate's cancel (ambiguous)", got)
	}
	if n := parked.c.requests(); n != 0 {
		t.Errorf("the parked call's caller was asked %d times", n)
	}
}
