package pool

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A worker that stops reading its input and sends requests no caller can take (a caller
// that declared no sampling) makes gemgate queue a bounded number of refusals, written by one
// goroutine: not a goroutine, and a refusal held, per request, which one user's worker could
// use to exhaust the gateway for every user.
func TestRequestFloodHoldsBoundedRefusals(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "mallory", false, `{}`, newCaller(time.Now()))
	base := runtime.NumGoroutine()
	flood := a.tool(t, "flood", map[string]any{"method": "sampling/createMessage", "n": 20000, "answer": true})
	s, w := a.m.current()
	if w == nil {
		t.Fatal("no worker")
	}
	// The pipe to the worker takes about a thousand refusals before it is full; the rest
	// wait, each once with a goroutine of its own. Counted until gemgate has read every
	// request (the worker answers the flood's call after them), and once more after.
	peak := 0
	for end, answered := time.Now().Add(waitFor), false; !answered; time.Sleep(10 * time.Millisecond) {
		select {
		case <-flood.Result():
			answered = true
		default:
			if time.Now().After(end) {
				t.Fatalf("the flood's call not answered within %v", waitFor)
			}
		}
		peak = max(peak, runtime.NumGoroutine()-base)
	}
	peak = max(peak, runtime.NumGoroutine()-base)
	s.mu.Lock()
	queued := len(w.refusals)
	s.mu.Unlock()
	if peak > 50 {
		t.Fatalf("the flood held %d more goroutines at once", peak)
	}
	if queued > maxRefusals {
		t.Fatalf("%d refusals queued, the bound is %d", queued, maxRefusals)
	}
	if queued == 0 {
		t.Fatal("no refusal waits: the worker did not stop reading, and the test proves nothing")
	}
}

// The ids gemgate gives the worker requests it passes to a client are never reused: not by
// the worker that succeeds one that died, so that a client's late answer to a dead worker's
// question is never taken as the answer to its successor's.
func TestWorkerRequestIDsOutliveTheirWorker(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now()))
	a.tool(t, "ask", map[string]any{"method": "elicitation/create"})
	_, q1 := a.c.request(t)
	if got := answer(t, a.tool(t, "die", nil)); !strings.Contains(got, "workerExit") {
		t.Fatalf("die: %s", got)
	}
	ask2 := a.tool(t, "ask", map[string]any{"method": "elicitation/create"})
	var q2 *jsonrpc.Message
	eventually(t, "the successor's request", func() bool {
		for _, m := range a.c.deliveries(t) {
			if m.Method == "elicitation/create" && string(m.ID) != string(q1.ID) {
				q2 = m
			}
		}
		return q2 != nil || a.c.requests() >= 2
	})
	if q2 == nil {
		t.Fatalf("the successor's request reuses the id %s of its predecessor's", q1.ID)
	}
	// The user, late, accepts the first question: it is no answer to the second.
	if _, err := a.m.Answer(&jsonrpc.Message{ID: q1.ID, Result: json.RawMessage(`{"action":"accept","content":{"for":"q1"}}`)}, false); !errors.Is(err, ErrNoSuchRequest) {
		t.Fatal("the late answer to the dead worker's question was taken")
	}
	if _, err := a.m.Answer(&jsonrpc.Message{ID: q2.ID, Result: json.RawMessage(`{"action":"decline"}`)}, false); err != nil {
		t.Fatal(err)
	}
	if got := answer(t, ask2); !strings.Contains(got, "decline") {
		t.Fatalf("the successor's question was answered with %s", got)
	}
}

// A worker request out to a caller that detaches is answered, once, with an error naming the
// session's end: the worker is not left waiting for a client that is gone. Another caller's
// call, answered by the worker with whatever its question got, shows what the worker read.
func TestDetachRefusesTheCallersWorkerRequests(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now()))
	b := attach(t, p, "alice", false, `{}`, newCaller(time.Now()))
	a.tool(t, "trigger", nil)
	if _, q := a.c.request(t); q.Method != "elicitation/create" {
		t.Fatalf("a got %s, want the worker's elicitation", q.Method)
	}
	later := b.tool(t, "later", nil) // written before the detach: answered with the question's answer
	a.m.Detach()
	if got := answer(t, later); !strings.Contains(got, "the session this request went to has ended") {
		t.Fatalf("the worker's question was answered with %s, want the session's end", got)
	}
}
