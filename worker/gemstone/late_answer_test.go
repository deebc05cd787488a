package gemstone

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// TestLateAnswerFailsNoOtherCall: the relay answers every request it read, in order, even
// one gemgate stopped waiting for (the liveness ping a request timeout sends is given up after
// 5 s; a cancelled tools/list, a logging/setLevel carried to a new worker, an unsubscribe).
// That late answer is to a call gemgate sent, in its place in the order: it is no corrupted
// answer, and the call behind it still gets its own answer, not the #51438 error.
func TestLateAnswerFailsNoOtherCall(t *testing.T) {
	s := newStone(t, nil)
	p := startRelay(t, s, "alice", token(goodClaims("alice")), false)
	send := func(id, method string, params json.RawMessage) <-chan *jsonrpc.Message {
		c, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(id), Method: method, Params: params}, nil)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if id == `"gemgate-health-0"` {
			// Given up on before the relay could answer (it has not even greeted yet).
			c.Abandon()
		}
		return c.Result()
	}
	send(`"gemgate-health-0"`, "ping", nil)
	status := send(`"c2"`, "tools/call", json.RawMessage(`{"name":"status"}`))
	select {
	case m := <-status:
		if m.Error != nil || !strings.Contains(string(m.Result), "user: alice") {
			t.Errorf("the call after a given-up ping got %s", m.Encode())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no answer")
	}
}
