package pool

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A read-only token's answer to a read-write worker's request is refused by the pool itself
// (ErrNotEntitled), and the request waits for an answer that is entitled.
func TestReadOnlyAnswerRefusedForReadWriteWorker(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now()))
	c := a.tool(t, "ask", map[string]any{"method": "elicitation/create"})
	_, req := a.c.request(t)
	accept := &jsonrpc.Message{ID: req.ID, Result: json.RawMessage(`{"action":"accept","content":{}}`)}
	if _, err := a.m.Answer(accept, true); !errors.Is(err, ErrNotEntitled) {
		t.Fatalf("a read-only answer to the read-write worker's request: %v, want ErrNotEntitled", err)
	}
	info, err := a.m.Answer(&jsonrpc.Message{ID: req.ID, Result: json.RawMessage(`{"action":"decline"}`)}, false)
	if err != nil || info.Method != "elicitation/create" || info.WorkerReadOnly {
		t.Fatalf("the read-write answer: %+v, %v", info, err)
	}
	if got := answer(t, c); !strings.Contains(got, "decline") {
		t.Errorf("the worker got %s; want the read-write answer (decline)", got)
	}
}
