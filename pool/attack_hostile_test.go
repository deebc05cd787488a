package pool

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// Attacks on who may answer a worker's request, on which call a request is taken to belong
// to, and on the user names a worker can act as, tried as a hostile client or worker would.

// A worker's request delivered to one session is answered with its gemgate id by another
// session of the same user, of the same access mode, and by an id guessed as gemgate numbers
// them: neither reaches the worker. The session it was delivered to still can.
func TestHeldAnswerFromAnotherSessionOrGuessedID(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now()))
	b := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now().Add(-time.Hour)))
	c := a.tool(t, "ask", map[string]any{"method": "elicitation/create"})
	_, req := a.c.request(t)
	accept := json.RawMessage(`{"action":"accept","content":{}}`)
	if _, err := b.m.Answer(&jsonrpc.Message{ID: req.ID, Result: accept}, false); !errors.Is(err, ErrNoSuchRequest) {
		t.Errorf("another session of the same user answered the request delivered to the first: %v; want ErrNoSuchRequest", err)
	}
	var gid string
	if err := json.Unmarshal(req.ID, &gid); err != nil || !strings.HasPrefix(gid, "gemgate-w") {
		t.Fatalf("the request's id %s is not gemgate's", req.ID)
	}
	for _, guess := range []string{"gemgate-w0", "gemgate-w1", "gemgate-w2", "gemgate-w3", "gemgate-w100"} {
		if guess == gid {
			continue
		}
		id, _ := json.Marshal(guess)
		if _, err := a.m.Answer(&jsonrpc.Message{ID: id, Result: accept}, false); !errors.Is(err, ErrNoSuchRequest) {
			t.Errorf("a guessed id %s was taken: %v", guess, err)
		}
		if _, err := b.m.Answer(&jsonrpc.Message{ID: id, Result: accept}, false); !errors.Is(err, ErrNoSuchRequest) {
			t.Errorf("a guessed id %s was taken from the other session: %v", guess, err)
		}
	}
	// The same id as a number, and with its case changed, is not the string gemgate sent.
	for _, spelled := range []string{strings.TrimPrefix(gid, "gemgate-w"), `"` + strings.ToUpper(gid) + `"`} {
		if _, err := a.m.Answer(&jsonrpc.Message{ID: json.RawMessage(spelled), Result: accept}, false); !errors.Is(err, ErrNoSuchRequest) {
			t.Errorf("the id spelled %s was taken: %v", spelled, err)
		}
	}
	if _, err := a.m.Answer(&jsonrpc.Message{ID: req.ID, Result: accept}, false); err != nil {
		t.Fatalf("the session asked could not answer: %v", err)
	}
	if got := answer(t, c); !strings.Contains(got, `"accept"`) {
		t.Errorf("the call ended %s; want the asked session's accept", got)
	}
}

// A read-only answer (a read-only token on a read-write session) to a read-write worker's
// request is refused by the pool itself, and the request stays, for an answer that is
// entitled; a second read-only try is refused too.
func TestHeldReadOnlyAnswerToReadWriteWorkerStays(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	a := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now()))
	c := a.tool(t, "ask", map[string]any{"method": "elicitation/create"})
	_, req := a.c.request(t)
	accept := json.RawMessage(`{"action":"accept","content":{}}`)
	for range 2 {
		info, err := a.m.Answer(&jsonrpc.Message{ID: req.ID, Result: accept}, true)
		if !errors.Is(err, ErrNotEntitled) {
			t.Fatalf("a read-only answer to a read-write worker: %v; want ErrNotEntitled", err)
		}
		if info.WorkerReadOnly || info.Method != "elicitation/create" {
			t.Errorf("the refusal's audit info %+v", info)
		}
	}
	decline := json.RawMessage(`{"action":"decline"}`)
	if _, err := a.m.Answer(&jsonrpc.Message{ID: req.ID, Result: decline}, false); err != nil {
		t.Fatalf("the entitled answer after the refused ones: %v", err)
	}
	if got := answer(t, c); !strings.Contains(got, `"decline"`) {
		t.Errorf("the call ended %s; want the entitled decline", got)
	}
}

// A session steps up between the question (asked by its read-only worker) and the answer:
// the request belongs to the worker it left, and an answer on the session now at the
// read-write worker reaches nothing there (ErrNoSuchRequest), whatever its access.
func TestHeldStepUpBetweenQuestionAndAnswer(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser})
	ro := attach(t, p, "alice", true, `{"elicitation":{}}`, newCaller(time.Now()))
	rw := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now().Add(-time.Hour)))
	c := rw.tool(t, "ask", map[string]any{"method": "elicitation/create"})
	_, req := rw.c.request(t)
	// The read-only session's member answers the read-write worker's request: not delivered
	// to it, so no such request, and its read-only access is never weighed.
	if _, err := ro.m.Answer(&jsonrpc.Message{ID: req.ID, Result: json.RawMessage(`{"action":"accept","content":{}}`)}, true); !errors.Is(err, ErrNoSuchRequest) {
		t.Errorf("the read-only session answered the read-write worker's request: %v", err)
	}
	if _, err := rw.m.Answer(&jsonrpc.Message{ID: req.ID, Result: json.RawMessage(`{"action":"decline"}`)}, false); err != nil {
		t.Fatal(err)
	}
	answer(t, c)
}

// maxAbandoned exhausted: a worker that ignores notifications/cancelled is given more than
// maxAbandoned calls that asks-capable, each cancelled by its client. From then on gemgate
// names no call as a request's owner (lostTrack). A later question, while the only call in
// flight is one made with a read-only token on the read-write session, must still not reach
// that read-only call nor be answerable by its token: it goes to no call.
func TestHeldAbandonedBookkeepingExhaustedNeverWidens(t *testing.T) {
	p := newTestPool(t, Settings{WorkerPer: PerUser, MaxCallsPerWorker: 4 * maxAbandoned})
	a := attach(t, p, "alice", false, `{"elicitation":{}}`, &fakeCaller{noStream: true, detached: make(chan string, 1)})
	for range maxAbandoned + 2 {
		c := a.tool(t, "hold", nil)
		c.Cancel("gone") // the worker ignores the cancel and runs it on
	}
	s, w := a.m.current()
	s.mu.Lock()
	lost, kept := w.lostTrack, len(w.abandoned)
	s.mu.Unlock()
	if !lost || kept != maxAbandoned {
		t.Fatalf("after %d abandoned calls: lostTrack %v, %d kept; want true, %d", maxAbandoned+2, lost, kept, maxAbandoned)
	}
	c := a.narrowed(t, "ask")
	if got := answer(t, c); !strings.Contains(got, `"cancel"`) {
		t.Errorf("the read-write worker's question during the only (read-only) call, with its bookkeeping exhausted, was answered %s; want gemgate's cancel", got)
	}
	if n := a.c.requests(); n != 0 {
		t.Errorf("%d worker requests were delivered to the read-only call's caller", n)
	}
}

// Two clients of one user (a person's IDE and an agent of theirs) have calls in flight at the
// user's worker when it asks for a confirmation: the question could be either call's, so it
// is asked of neither client. Once it went to the most recently active session with a
// stream, which the agent keeps by being busy; its "accept" answered the person's
// confirmation with its own read-write token. The worker gets gemgate's cancel, as if the user
// made no choice. The same holds when gemgate has lost track of the calls given up
// (maxAbandoned cancels the worker never answered).
func TestAttackAmbiguousQuestionIsAskedOfNoClient(t *testing.T) {
	for _, how := range []string{"a call in flight", "calls cancelled and never answered"} {
		t.Run(how, func(t *testing.T) {
			p := newTestPool(t, Settings{WorkerPer: PerUser})
			honest := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now().Add(-time.Hour)))
			other := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now()))
			if how == "a call in flight" {
				defer other.tool(t, "hold", nil).Cancel("test over")
			} else {
				for range maxAbandoned + 1 {
					other.tool(t, "hold", nil).Cancel("never mind") // the worker answers nothing
				}
			}
			c := honest.tool(t, "ask", map[string]any{"method": "elicitation/create"})
			if got := answer(t, c); got != `{"action":"cancel"}` {
				t.Errorf("the worker got %s for its ambiguous question, want gemgate's cancel", got)
			}
			if n := honest.c.requests() + other.c.requests(); n != 0 {
				t.Errorf("the ambiguous question was delivered %d times, want never", n)
			}
		})
	}
}
