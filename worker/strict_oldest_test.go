//go:build linux

package worker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A Strict worker answers in the order it was asked, so a line that is not a valid answer
// was the answer to the oldest call pending: with two calls pending, that line fails the first
// one sent with StrictError, and the second still gets its own answer, written after it.
// A call answered before them, while the first was pending, leaves the pending calls out of
// the order they were sent in the gateway's map of them: the oldest is found by its id, not by
// where it sits there.
func TestStrictInvalidLineFailsTheOldestCall(t *testing.T) {
	const strictErr = "answer corrupted (defect 12345)"
	for name, bad := range map[string]string{
		"not JSON":      `%%% not an answer`,
		"not a message": `{"jsonrpc":"2.0"}`,
		"id never sent": `{"jsonrpc":"2.0","id":999,"result":{"stray":true}}`,
	} {
		t.Run(name, func(t *testing.T) {
			// Reads the earlier call and the first, answers the earlier one, reads the second,
			// then writes the bad line and answers the second under its id.
			script := `idof() { printf '%s\n' "$1" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p'; }
read -r earlier; read -r first
printf '{"jsonrpc":"2.0","id":%s,"result":{"answered":"earlier"}}\n' "$(idof "$earlier")"
read -r second
printf '%s\n' "$1"
printf '{"jsonrpc":"2.0","id":%s,"result":{"answered":"second"}}\n' "$(idof "$second")"
exec cat >/dev/null`
			p, err := Start(Spec{Path: "/bin/sh", Args: []string{"-c", script, "sh", bad},
				StopGrace: 200 * time.Millisecond, Strict: true, StrictError: strictErr})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			send := func(id string) *Call {
				c, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(id), Method: "tools/call", Params: json.RawMessage(`{}`)}, nil)
				if err != nil {
					t.Fatalf("Send %s: %v", id, err)
				}
				return c
			}
			answer := func(c *Call) *jsonrpc.Message {
				select {
				case m := <-c.Result():
					return m
				case <-time.After(5 * time.Second):
					t.Fatal("no answer")
					return nil
				}
			}
			earlier, first := send(`"earlier"`), send(`"first"`)
			if m := answer(earlier); string(m.Result) != `{"answered":"earlier"}` {
				t.Fatalf("the earlier call got %s", m.Encode())
			}
			second := send(`"second"`)
			a1, a2 := answer(first), answer(second)
			var e jsonrpc.RPCError
			if json.Unmarshal(a1.Error, &e) != nil || string(a1.ID) != `"first"` || e.Message != strictErr {
				t.Errorf("the first call sent got %s, want the error %q", a1.Encode(), strictErr)
			}
			if string(a2.ID) != `"second"` || string(a2.Result) != `{"answered":"second"}` {
				t.Errorf("the second call sent got %s, want its own answer", a2.Encode())
			}
		})
	}
}

// A Strict worker answers every call it was sent, in order, those given up on too (Abandon: a
// tools/list whose client cancelled it, a request timeout). A corrupted answer to a call given
// up on is that call's, not the next pending call's: the call behind it must get its own
// answer, which follows, not the corrupted one's error (and its own answer dropped as late).
func TestStrictCorruptAnswerOfAbandonedCallFailsNoOther(t *testing.T) {
	const strictErr = "answer corrupted (defect 12345)"
	script := `idof() { printf '%s\n' "$1" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p'; }
read -r abandoned; read -r next; read -r go
printf '%%%% not an answer\n'
printf '{"jsonrpc":"2.0","id":%s,"result":{"answered":"next"}}\n' "$(idof "$next")"
exec cat >/dev/null`
	p, err := Start(Spec{Path: "/bin/sh", Args: []string{"-c", script}, StopGrace: 200 * time.Millisecond, Strict: true, StrictError: strictErr})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	send := func(id string) *Call {
		c, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(id), Method: "tools/list"}, nil)
		if err != nil {
			t.Fatalf("Send %s: %v", id, err)
		}
		return c
	}
	abandoned, next := send(`"abandoned"`), send(`"next"`)
	if !abandoned.Abandon() {
		t.Fatal("the first call was no longer pending")
	}
	if err := p.Write(context.Background(), jsonrpc.Notification("go", nil)); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-next.Result():
		if string(m.ID) != `"next"` || string(m.Result) != `{"answered":"next"}` {
			t.Errorf("the call behind the abandoned one got %s, want its own answer", m.Encode())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer")
	}
}
