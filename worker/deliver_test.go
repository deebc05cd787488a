package worker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// TestSendToRecipientDelivers: sent to a RecipientFunc, the answer under the caller's id, and the error a
// worker's exit gives a pending call, go to deliver once each; a withdrawn call's never does.
func TestSendToRecipientDelivers(t *testing.T) {
	p := startFake(t, "echo", nil)
	got := make(chan *jsonrpc.Message, 10)
	deliver := func(m *jsonrpc.Message) { got <- m }
	send := func(id, method string) *Call {
		c, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(id), Method: method}, RecipientFunc(deliver))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	next := func(what string) *jsonrpc.Message {
		t.Helper()
		select {
		case m := <-got:
			return m
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: nothing delivered", what)
			return nil
		}
	}
	send(`"a"`, "ping")
	if m := next("answer"); string(m.ID) != `"a"` || m.Result == nil {
		t.Errorf("answer %s", m.Encode())
	}
	withdrawn := send(`"w"`, "hang")
	if !withdrawn.Abandon() {
		t.Error("Abandon of an unanswered call reported it answered")
	}
	send(`"h"`, "hang")
	send(`"x"`, "crash")
	ids := map[string]bool{}
	for range 2 {
		m := next("the exit's errors")
		if m.Error == nil {
			t.Errorf("want an error, got %s", m.Encode())
		}
		ids[string(m.ID)] = true
	}
	if !ids[`"h"`] || !ids[`"x"`] {
		t.Errorf("errors delivered for %v, want \"h\" and \"x\"", ids)
	}
	<-p.Done()
	select {
	case m := <-got:
		t.Errorf("delivered after the end (a withdrawn call's?): %s", m.Encode())
	default:
	}
}
