package pool

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// narrowed is s's identity with read-only access: a read-only token's call on a read-write
// session.
func (s *session) narrowed(t *testing.T, name string) *Call {
	t.Helper()
	id := s.id
	id.ReadOnly = true
	b, _ := json.Marshal(map[string]any{"name": name, "arguments": map[string]any{"method": "elicitation/create"}})
	c, err := s.m.Call(t.Context(), Request{Message: &jsonrpc.Message{ID: json.RawMessage(`"narrowed"`), Method: "tools/call", Params: b}, Identity: id})
	if err != nil {
		t.Fatalf("narrowed %s: %v", name, err)
	}
	return c
}

// A read-write call whose client went away (Cancel) keeps running in a worker that ignores
// notifications/cancelled, and its confirmation comes later, while another call is the only
// one its caller still waits for. gemgate still counts the abandoned call at the worker, so
// the confirmation is not the other call's: it goes to no call's stream, and with no stream
// to ask on, gemgate answers it itself, cancelled.
func TestAbandonedCallStillCountsAtTheWorker(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", false, `{"elicitation":{}}`, &fakeCaller{noStream: true, detached: make(chan string, 1)})
	b := attach(t, p, "alice", false, `{"elicitation":{}}`, &fakeCaller{noStream: true, detached: make(chan string, 1)})
	gone := a.tool(t, "later", nil)
	gone.Cancel("client disconnected")
	other := b.tool(t, "trigger", nil)
	if got := answer(t, other); !strings.Contains(got, `"cancel"`) {
		t.Errorf("the worker's confirmation for the abandoned call was answered %s; want gemgate's cancel", got)
	}
	for _, s := range []*session{a, b} {
		s.c.mu.Lock()
		for _, d := range s.c.got {
			if d.Request {
				t.Errorf("the abandoned call's confirmation was delivered to a caller (with call %p; the other call is %p): %s", d.Call, other, d.Message)
			}
		}
		s.c.mu.Unlock()
	}
}

// A call made with read-only access on a read-write worker (a read-only token on a
// read-write session) is never asked the worker's question, even as the only call in flight:
// its token could not answer for the worker's mode. gemgate answers the worker itself with the
// fail-safe answer, and logs it.
func TestNarrowedCallIsNeverAskedForReadWriteWorker(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now()))
	c := a.narrowed(t, "ask")
	if got := answer(t, c); !strings.Contains(got, `"cancel"`) {
		t.Errorf("the read-write worker's question asked during a read-only call was answered %s; want gemgate's cancel", got)
	}
	if n := a.c.requests(); n != 0 {
		t.Errorf("the read-only call's caller was delivered %d worker requests; want none", n)
	}
}

// A worker that asks its client something at start-up, while gemgate's first call (a
// tools/list, which cannot ask anything) is in flight, asks outside any call: the request is
// not attached to the tools/list. A caller with a stream gets it there (Call nil).
func TestStartupRequestIsNoCallsOwn(t *testing.T) {
	p, err := New(Options{Settings: Settings{WorkerPer: PerUser}, Launcher: scriptLauncher{env: []string{"POOL_TEST_ASK_AT_LIST=1"}}, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	a := attach(t, p, "alice", false, `{"roots":{}}`, newCaller(time.Now()))
	list, err := a.call(t, "tools/list", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	answer(t, list)
	d, req := a.c.request(t)
	if req.Method != "roots/list" {
		t.Fatalf("the worker's request: %s", d.Message)
	}
	if d.Call != nil {
		t.Errorf("the worker's start-up roots/list was delivered as the tools/list call's (%p); want it on no call", d.Call)
	}
}

// With no caller that can be asked (no stream), such a request gets gemgate's fail-safe
// answer: no roots.
func TestStartupRequestUnaskedGetsNoRoots(t *testing.T) {
	p, err := New(Options{Settings: Settings{WorkerPer: PerUser}, Launcher: scriptLauncher{env: []string{"POOL_TEST_ASK_AT_LIST=1"}}, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	a := attach(t, p, "alice", false, `{"roots":{}}`, &fakeCaller{noStream: true, detached: make(chan string, 1)})
	list, err := a.call(t, "tools/list", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	answer(t, list)
	deadline := time.Now().Add(waitFor)
	for {
		got := answer(t, a.tool(t, "record", nil))
		if strings.Contains(got, `roots:{"roots":[]}`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker recorded %q; want gemgate's answer of no roots", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := a.c.requests(); n != 0 {
		t.Errorf("%d requests delivered to a caller without a stream", n)
	}
}

// gemgate initializes a shared worker declaring what it can route to the client a request
// belongs to: sampling and elicitation (asked within a call, in both eras), not roots (one
// client's, while the worker serves all the user's clients, and asked outside any call).
func TestSharedWorkerIsToldOnlyWhatGemgateRoutes(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	var params struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(p.ownParams(), &params); err != nil {
		t.Fatal(err)
	}
	if _, ok := params.Capabilities["roots"]; ok {
		t.Errorf("gemgate declares roots to a shared worker: %s", p.ownParams())
	}
	for _, c := range []string{"sampling", "elicitation"} {
		if _, ok := params.Capabilities[c]; !ok {
			t.Errorf("gemgate does not declare %s to a shared worker: %s", c, p.ownParams())
		}
	}
}

// A call its caller gave up is the one the worker asks for when it is the only call that can
// ask (the worker ignored the cancel and asks for the call's confirmation): its client is gone,
// so nobody is asked, not even its own session's stream, and gemgate answers the worker
// (cancel), logged.
func TestGivenUpCallsQuestionIsAskedOfNobody(t *testing.T) {
	var logs lockedLog
	p, err := New(Options{Settings: Settings{WorkerPer: PerUser}, Launcher: scriptLauncher{}, InitTimeout: waitFor,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	a := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now()))
	a.tool(t, "later", nil).Cancel("client disconnected")
	eventually(t, "gemgate's answer to the given-up call's question", func() bool {
		return strings.Contains(logs.String(), `"reason":"the call that asked was given up by its client"`)
	})
	// The audit line comes before the answer is written (refuseLocked queues it): ask until the
	// worker has read it.
	deadline := time.Now().Add(waitFor)
	for {
		got := answer(t, a.tool(t, "record", nil))
		if strings.Contains(got, `after-cancel:{"action":"cancel"}`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker recorded %q; want gemgate's cancel", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := a.c.requests(); n != 0 {
		t.Errorf("the given-up call's question was delivered to its caller %d times; want none", n)
	}
}

// detachingCaller is a session that ends while gemgate chooses it to take a worker's request:
// asked whether it can take one, it detaches its member, then says it can.
type detachingCaller struct {
	*fakeCaller
	m    atomic.Pointer[Member]
	once sync.Once
}

func (c *detachingCaller) CanTakeRequest() bool {
	m := c.m.Load()
	if m == nil {
		return false // not attached yet
	}
	c.once.Do(m.Detach)
	return true
}

// A worker's request whose chosen session ends before the request is recorded for it is
// refused at once, as the session's end refuses the requests it holds: it is never left to a
// session that is gone, where nobody would answer it and the worker would wait for good.
func TestRequestToASessionThatEndedWhileChosenIsRefused(t *testing.T) {
	p, err := New(Options{Settings: Settings{WorkerPer: PerUser}, Launcher: scriptLauncher{env: []string{"POOL_TEST_ASK_AT_LIST=1"}}, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	dc := &detachingCaller{fakeCaller: newCaller(time.Now())}
	id := Identity{Issuer: "https://issuer.test", Subject: "sub-alice", User: "alice", Session: "ending"}
	m, _, err := p.Attach(t.Context(), Attach{Identity: id, Caller: dc,
		Params: json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"0"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	dc.m.Store(m)
	// The user's other session, which cannot be asked, keeps the worker and reads its record.
	b := attach(t, p, "alice", false, `{}`, &fakeCaller{noStream: true, detached: make(chan string, 1)})
	ending := &session{m: m, id: id, c: dc.fakeCaller}
	if _, err := ending.call(t, "tools/list", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitFor)
	for {
		got := answer(t, b.tool(t, "record", nil))
		if strings.Contains(got, "roots:") {
			if !strings.Contains(got, "the session this request went to has ended") {
				t.Fatalf("the worker's roots/list was answered %q; want the session's end", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker's roots/list was never answered (recorded %q)", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := dc.requests(); n != 0 {
		t.Errorf("%d requests delivered to the session that had ended", n)
	}
}
