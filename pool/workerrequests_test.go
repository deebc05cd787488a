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

// A worker request waiting for a client keeps only what gemgate needs to answer it: the
// worker's id, not the whole line it came in (a message's members are slices of its line).
// Else the 64 requests a worker may have waiting, each of up to 16 MiB, would hold a gigabyte
// for as long as the clients do not answer, beyond every bound on what gemgate queues.
func TestWaitingWorkerRequestsHoldNotTheirLines(t *testing.T) {
	const n, pad = 16, 4 << 20
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now()))
	heap := func() uint64 {
		// The client's copies of the requests are not gemgate's: they go first.
		a.c.mu.Lock()
		a.c.got = nil
		a.c.mu.Unlock()
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	for range n {
		a.tool(t, "ask", map[string]any{"method": "elicitation/create", "pad": pad})
		eventually(t, "the worker's request", func() bool { return a.c.requests() > 0 })
		a.c.mu.Lock()
		a.c.got = nil
		a.c.mu.Unlock()
	}
	s, w := a.m.current()
	s.mu.Lock()
	waiting := len(w.requests)
	s.mu.Unlock()
	if waiting != n {
		t.Fatalf("%d worker requests wait, want %d", waiting, n)
	}
	if held := int64(heap()) - int64(before); held > n*pad/4 {
		t.Errorf("%d waiting worker requests of %d MiB each hold %d MiB", n, pad>>20, held>>20)
	}
}
