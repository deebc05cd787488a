package pool

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A request the worker sends goes to the caller of the only call in flight if it declared the
// capability; otherwise to the most recently active caller that declared it and has a stream;
// with none, gemgate answers the worker on the client's behalf (an elicitation is cancelled,
// sampling is an error), and the call ends cleanly.
func TestWorkerRequestRouting(t *testing.T) {
	const elicit = `{"elicitation":{}}`
	t0 := time.Unix(1000, 0)
	type member struct {
		caps     string
		last     time.Duration // after t0
		noStream bool
	}
	cases := []struct {
		name    string
		members []member // members[0] makes the asking call
		hold    bool     // members[0] also holds another call: the ask is not the only one
		want    int      // index of the member that gets the request; -1 nobody
	}{
		{"sole caller with the capability", []member{{elicit, 0, false}, {elicit, 9, false}}, false, 0},
		{"sole caller without it: the most recent capable one", []member{{`{}`, 9, false}, {elicit, 1, false}, {elicit, 2, false}}, false, 2},
		// Both calls are member 0's: the request is neither's, and goes to member 0's
		// session stream, never to another client of the user.
		{"two calls of one caller in flight: its session's stream", []member{
			{elicit, 0, false}, {elicit, 2, false}, {elicit, 3, true}, {`{}`, 4, false},
		}, true, 0},
		{"two calls of one caller without a stream: nobody", []member{
			{elicit, 0, true}, {elicit, 2, false},
		}, true, -1},
		{"nobody can answer", []member{{`{"sampling":{}}`, 0, false}, {elicit, 1, true}}, false, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPool(t, Settings{})
			var ss []*session
			for _, m := range tc.members {
				c := newCaller(t0.Add(m.last * time.Second))
				c.noStream = m.noStream
				ss = append(ss, attach(t, p, "alice", false, m.caps, c))
			}
			if tc.hold {
				ss[0].tool(t, "hold", map[string]any{})
			}
			ask := ss[0].tool(t, "ask", map[string]any{"method": "elicitation/create"})
			if tc.want < 0 {
				// An elicitation nobody can show is answered as a user who made no choice.
				if got := answer(t, ask); got != `{"action":"cancel"}` {
					t.Errorf("the worker got %s, want gemgate's cancel", got)
				}
				for i, s := range ss {
					if n := s.c.requests(); n != 0 {
						t.Errorf("member %d got %d requests", i, n)
					}
				}
				return
			}
			to := ss[tc.want]
			d, req := to.c.request(t)
			if req.Method != "elicitation/create" {
				t.Fatalf("delivered %s", req.Method)
			}
			if soleCall := tc.want == 0 && !tc.hold; (d.Call == ask) != soleCall {
				t.Errorf("Delivery.Call is the asking call: %v, want %v", d.Call == ask, soleCall)
			}
			// Only the member it went to may answer it.
			for i, s := range ss {
				if i == tc.want {
					continue
				}
				if _, err := s.m.Answer(&jsonrpc.Message{ID: req.ID, Result: json.RawMessage(`{"action":"decline"}`)}, false); !errors.Is(err, ErrNoSuchRequest) {
					t.Errorf("member %d's answer to another member's request was taken", i)
				}
			}
			if _, err := to.m.Answer(&jsonrpc.Message{ID: req.ID, Result: json.RawMessage(`{"action":"accept"}`)}, false); err != nil {
				t.Fatalf("Answer: %v", err)
			}
			if got := answer(t, ask); got != `{"action":"accept"}` {
				t.Errorf("the worker got %s", got)
			}
			for i, s := range ss {
				if n := s.c.requests(); (i == tc.want) != (n == 1) || n > 1 {
					t.Errorf("member %d got %d requests", i, n)
				}
			}
		})
	}
}

// A sampling request nobody can take has no answer that fails safe: the worker gets gemgate's
// error on the client's behalf, and no member is asked.
func TestWorkerSamplingNobodyCanAnswer(t *testing.T) {
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Unix(1000, 0)))
	ask := a.tool(t, "ask", map[string]any{"method": "sampling/createMessage"})
	if got := answer(t, ask); !strings.Contains(got, "no client session can answer sampling/createMessage") {
		t.Errorf("the worker got %s, want gemgate's error", got)
	}
	if n := a.c.requests(); n != 0 {
		t.Errorf("the member without sampling got %d requests", n)
	}
}

// A worker that withdraws its request to a client (notifications/cancelled, as a server does
// when the call that asked ends) names it by its own id; the client knows it by gemgate's.
// gemgate tells the client the request went to, by gemgate's id, and nobody else, and the
// request is no longer open: a late answer is not passed on.
func TestWorkerCancelsItsRequestByGemgatesID(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Unix(1000, 0)))
	b := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Unix(900, 0)))
	asking := a.tool(t, "ask", map[string]any{"method": "elicitation/create"}) // the worker's id: wr-1
	_, req := a.c.request(t)
	answer(t, a.tool(t, "emit", map[string]any{"method": "notifications/cancelled", "params": map[string]any{"requestId": "wr-1", "reason": "timed out"}}))
	var got []string
	a.c.mu.Lock()
	for _, d := range a.c.got {
		if m, err := jsonrpc.Parse(d.Message, jsonrpc.Options{}); err == nil && m.Method == "notifications/cancelled" {
			got = append(got, string(m.Params))
			if d.Call != asking { // where the question was asked: the asking call's stream
				t.Errorf("the withdrawal went with call %p, want the asking call %p", d.Call, asking)
			}
		}
	}
	a.c.mu.Unlock()
	if want := `"requestId":` + string(req.ID); len(got) != 1 || !strings.Contains(got[0], want) {
		t.Errorf("the client the request went to (as %s) was told of its withdrawal %q; want once, naming %s", req.ID, got, want)
	}
	for _, m := range b.c.deliveries(t) {
		if m.Method == "notifications/cancelled" {
			t.Errorf("another session was told of the withdrawal of a request it was never sent: %s", m.Params)
		}
	}
	if _, err := a.m.Answer(&jsonrpc.Message{ID: req.ID, Result: json.RawMessage(`{"action":"accept"}`)}, false); !errors.Is(err, ErrNoSuchRequest) {
		t.Errorf("an answer to the withdrawn request: %v, want ErrNoSuchRequest", err)
	}
}

// A call its client gave up stays counted at a worker that has not answered it (up to 1,024 of
// them per worker, maxAbandoned), so that a question the worker asks later is known to be
// nobody's. What it keeps must be what that needs, not the client's request: the gateway parses
// a body in place (its id and params are slices of it), and a worker slow to answer cancelled
// calls would otherwise keep every cancelled body, up to max_body_bytes each.
func TestAbandonedCallsHoldNotTheirBodies(t *testing.T) {
	const n, pad = 16, 512 << 10 // the test worker reads lines of up to 1 MiB
	p := newTestPool(t, Settings{})
	a := attach(t, p, "alice", false, `{}`, newCaller(time.Now()))
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	before := heap()
	for i := range n {
		// As the gateway hands a POST body over: parsed in place, the members slices of it, the
		// id a copy of its own (gateway's post).
		body := []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(1000+i) + `,"method":"tools/call","params":{"name":"hold","arguments":{"pad":"` +
			strings.Repeat("x", pad) + `"}}}`)
		msg, err := jsonrpc.Parse(body, jsonrpc.Options{Client: true, Owned: true})
		if err != nil {
			t.Fatal(err)
		}
		msg.ID = bytes.Clone(msg.ID)
		c, err := a.m.Call(t.Context(), Request{Message: msg, Identity: a.id})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "the call written", func() bool { return a.m.inFlight.Load() == 1 })
		c.Cancel("the client gave up")
		eventually(t, "the call given up", func() bool { return a.m.inFlight.Load() == 0 })
	}
	s, w := a.m.current()
	s.mu.Lock()
	kept := len(w.abandoned)
	s.mu.Unlock()
	if kept != n {
		t.Fatalf("%d calls given up are counted at the worker, want %d", kept, n)
	}
	if held := heap() - before; held > n*pad/4 {
		t.Errorf("%d calls given up, of %d KiB each, hold %d KiB", n, pad>>10, held>>10)
	}
}
