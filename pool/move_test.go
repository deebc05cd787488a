package pool

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A step-up moves a caller to its read-write worker; a call it made on the read-only worker
// before the move goes on there and gets its own answer, not an error saying the session
// ended (the session goes on).
func TestMoveKeepsCallsInFlight(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
	roPid := a.m.WorkerPid()
	running := a.tool(t, "wait", map[string]any{"ms": 300})
	rw := a.id
	rw.ReadOnly = false
	if err := a.m.Move(t.Context(), rw); err != nil {
		t.Fatal(err)
	}
	if pid := a.m.WorkerPid(); pid == roPid || pid == 0 {
		t.Fatalf("after the move: worker %d, was %d", pid, roPid)
	}
	if got := answer(t, running); got != "waited" {
		t.Errorf("the call in flight at the move got %s, want its own answer", got)
	}
	a.id = rw
	if got := answer(t, a.tool(t, "record", map[string]any{})); got != "" {
		t.Errorf("a call after the move: %q", got)
	}
}

// A step-up moves a caller that is subscribed to resources and set a logging level: both go
// with it. The read-write worker is subscribed to those URIs and set to that level before
// it takes the session's calls, its resources/updated reaches the session, and the
// read-only worker, which nobody else uses, is unsubscribed.
func TestMoveCarriesSubscriptionsAndLevel(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
	roProbe := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
	for _, step := range []struct{ method, key, value string }{
		{"resources/subscribe", "uri", "u1"},
		{"resources/subscribe", "uri", "u2"},
		{"logging/setLevel", "level", "info"},
	} {
		c, err := a.call(t, step.method, map[string]string{step.key: step.value})
		if err != nil {
			t.Fatal(err)
		}
		if got := answer(t, c); got != `{}` {
			t.Fatalf("%s %s: %s", step.method, step.value, got)
		}
	}
	rw := a.id
	rw.ReadOnly = false
	if err := a.m.Move(t.Context(), rw); err != nil {
		t.Fatal(err)
	}
	a.id = rw
	heard := answer(t, a.tool(t, "record", map[string]any{}))
	if heard != "subscribe u1,subscribe u2,setLevel info" && heard != "subscribe u2,subscribe u1,setLevel info" {
		t.Errorf("the read-write worker heard %q, want u1 and u2 subscribed and the level info", heard)
	}
	answer(t, a.tool(t, "emit", map[string]any{"method": "notifications/resources/updated", "params": map[string]string{"uri": "u2"}}))
	if n := notified(t, a.c, "notifications/resources/updated"); n != 1 {
		t.Errorf("the moved session got %d resources/updated from its new worker, want 1", n)
	}
	eventually(t, "the read-only worker lets the URIs go", func() bool {
		return len(heardOf(record(t, roProbe), "u1")) == 2 && len(heardOf(record(t, roProbe), "u2")) == 2
	})
}

// A subscribe still unanswered at the read-only worker when its session steps up goes with
// the session; when the read-only worker then refuses it, the session, answered that
// refusal, counts at the read-write worker no more, and that worker is let go of the URI.
func TestMoveCarriesALateRefusal(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
	ro := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
	const uri = "held:refused:late"
	sub, err := a.call(t, "resources/subscribe", map[string]string{"uri": uri})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the read-only worker reads the subscribe", func() bool { return len(heardOf(record(t, ro), uri)) == 1 })
	rw := a.id
	rw.ReadOnly = false
	if err := a.m.Move(t.Context(), rw); err != nil {
		t.Fatal(err)
	}
	a.id = rw
	answer(t, ro.tool(t, "release", map[string]any{}))
	if got := <-sub.Result(); got.Error == nil {
		t.Fatalf("the subscribe: %s, want the read-only worker's refusal", got.Encode())
	}
	s := a.m.s.Load()
	eventually(t, "the read-write worker lets the URI go", func() bool {
		s.mu.Lock()
		counted := len(s.w.subs[uri]) > 0 || s.w.heard[uri] != nil
		s.mu.Unlock()
		heard := heardOf(record(t, a), uri)
		return !counted && len(heard) > 0 && heard[len(heard)-1] == "unsubscribe "+uri
	})
}

// A step-up keeps the session's calls in flight at the read-only worker, and with them the
// questions they asked the client: the client's answer, sent after the move, reaches the
// worker that asked, which is not told the session ended (it goes on).
func TestMoveKeepsTheQuestionsOfCallsInFlight(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", true, `{"elicitation":{}}`, newCaller(time.Time{}))
	ask := a.tool(t, "ask", map[string]any{"method": "elicitation/create"})
	_, req := a.c.request(t)
	rw := a.id
	rw.ReadOnly = false
	if err := a.m.Move(t.Context(), rw); err != nil {
		t.Fatal(err)
	}
	_, err := a.m.Answer(&jsonrpc.Message{ID: req.ID, Result: json.RawMessage(`{"action":"accept"}`)}, true)
	if err != nil {
		t.Errorf("the client's answer, after the move, to the question of its call still in flight: %v", err)
	}
	if got := answer(t, ask); got != `{"action":"accept"}` {
		t.Errorf("the read-only worker's question of a call that went on after the move was answered %s; want the client's accept", got)
	}
}

// Those questions, unanswered, are answered with the session's end when it ends, and their
// calls end with it: the worker it left waits for nobody, and neither does the call's waiter.
func TestMovedSessionsEndAnswersItsQuestionsAtTheWorkerItLeft(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", true, `{"elicitation":{}}`, newCaller(time.Time{}))
	ask := a.tool(t, "ask", map[string]any{"method": "elicitation/create"})
	a.c.request(t)
	rw := a.id
	rw.ReadOnly = false
	if err := a.m.Move(t.Context(), rw); err != nil {
		t.Fatal(err)
	}
	a.m.Detach()
	if got := answer(t, ask); !strings.Contains(got, "the session ended before the worker answered") && !strings.Contains(got, "the session this request went to has ended") {
		t.Errorf("the question of the ended session's call at the worker it left was answered %s; want the session's end", got)
	}
}

// A session's calls end with it, those it kept in flight at the worker a step-up moved it from
// too: each waiter gets the session's end with its own id, and the worker is told to cancel
// (a shared worker must not work for nobody).
func TestMovedSessionsEndEndsItsCallsAtTheWorkerItLeft(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
	// The read-only worker stays in use by another session: it lives on after the move.
	b := attach(t, p, "alice", true, `{}`, newCaller(time.Time{}))
	long := a.tool(t, "hold", map[string]any{}) // never answered
	rw := a.id
	rw.ReadOnly = false
	if err := a.m.Move(t.Context(), rw); err != nil {
		t.Fatal(err)
	}
	a.m.Detach()
	select {
	case m := <-long.Result():
		if m.Error == nil || !strings.Contains(string(m.Error), "session ended") {
			t.Errorf("the ended session's call at the worker it left got %s %s; want the session's end", m.Result, m.Error)
		}
	case <-time.After(3 * time.Second):
		t.Errorf("the ended session's call at the worker it left (which still serves another session) is still waiting 3 s after the end; want it ended with the session")
	}
	_ = b
}

// A question the worker a step-up moved a session from asks after the move, for the session's
// call that went on there, goes to the session as before the move, not refused as if it had
// ended: the session goes on, and answers it.
func TestMoveKeepsAskingForCallsInFlight(t *testing.T) {
	p, err := New(Options{Settings: Settings{WorkerPer: PerUser}, Launcher: scriptLauncher{env: []string{"POOL_TEST_ASK_AT_LIST=1"}}, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	a := attach(t, p, "alice", true, `{"roots":{}}`, newCaller(time.Time{}))
	b := attach(t, p, "alice", true, `{}`, &fakeCaller{noStream: true, detached: make(chan string, 1)})
	a.tool(t, "later", nil) // goes on at the read-only worker
	rw := a.id
	rw.ReadOnly = false
	if err := a.m.Move(t.Context(), rw); err != nil {
		t.Fatal(err)
	}
	// b's tools/list makes the read-only worker ask roots/list, while a's call is the only
	// one there that can ask: the question is taken as that call's.
	list, err := b.call(t, "tools/list", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	answer(t, list)
	deadline := time.Now().Add(waitFor)
	for a.c.requests() == 0 {
		got := answer(t, b.tool(t, "record", nil))
		if strings.Contains(got, "roots:") {
			t.Fatalf("the question for the moved session's call was answered %q; want it asked of the session", got)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the question was neither asked of the session nor answered (recorded %q)", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, req := a.c.request(t)
	if _, err := a.m.Answer(&jsonrpc.Message{ID: req.ID, Result: json.RawMessage(`{"roots":[{"uri":"file:///a"}]}`)}, false); err != nil {
		t.Fatalf("the session's answer: %v", err)
	}
	eventually(t, "the worker has the session's answer", func() bool {
		return strings.Contains(answer(t, b.tool(t, "record", nil)), `roots:{"roots":[{"uri":"file:///a"}]}`)
	})
}
