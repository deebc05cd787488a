package pool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth"
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
		c.Abandon() // gone without a cancel: the worker runs it on
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

// lateLauncher starts a worker (a shell script) that, once gemgate has told it
// notifications/initialized, finishes starting up before it reads anything more (it waits
// for the file flag, standing for slow start-up work) and then asks its client
// elicitation/create: a start-up request, asked before the worker read any call. It answers
// every tools/call with the text "done".
type lateLauncher struct{ flag string }

func (l lateLauncher) Launch(ctx context.Context, id Identity) (Launch, error) {
	cl := &CommandLauncher{Command: []string{"/bin/sh", "-c", lateWorker}, Env: []string{"LATE_FLAG=" + l.flag}, StopGrace: time.Second}
	return cl.Launch(ctx, id)
}

const lateWorker = `
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\("[^"]*"\|[0-9]*\).*/\1/p')
  case "$line" in
  *'"method":"initialize"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"late","version":"0"}}}\n' "$id" ;;
  *'"method":"notifications/initialized"'*)
    n=0
    while [ ! -e "$LATE_FLAG" ] && [ $n -lt 2000 ]; do sleep 0.01; n=$((n+1)); done
    printf '{"jsonrpc":"2.0","id":"boot","method":"elicitation/create","params":{"message":"start-up question","requestedSchema":{"type":"object","properties":{}}}}\n' ;;
  *'"method":"tools/call"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"done"}]}}\n' "$id" ;;
  *'"method"'*) [ -n "$id" ] && printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id" ;;
  esac
done
`

// Item 2: a worker's start-up request is written before the worker reads the first call
// (a worker slow to start asks its client once its own start-up work is done), but it
// reaches gemgate after that call was written. askerLocked takes "the only call written"
// as the owner, so the start-up question is delivered as that tools/call's own (on its
// stream; in the 2026-07-28 era, as its input-required result). Which call a request belongs
// to is still guessed from timing: a request that belongs to no call is attached to one.
func TestHoleStartupRequestReadLateIsAttachedToFirstCall(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "started")
	p, err := New(Options{Settings: Settings{WorkerPer: PerUser}, Launcher: lateLauncher{flag: flag}, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	a := attach(t, p, "alice", false, `{"elicitation":{}}`, newCaller(time.Now()))
	c := a.tool(t, "anything", nil) // the client's first call, written to the worker's stdin
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d, req := a.c.request(t)
	if req.Method != "elicitation/create" {
		t.Fatalf("the worker's request: %s", d.Message)
	}
	if d.Call != nil {
		t.Errorf("the worker's start-up elicitation (written before it read any call) was delivered as the tools/call's own (the call: %v)", d.Call == c)
	}
	_, _ = a.m.Answer(&jsonrpc.Message{ID: req.ID, Result: json.RawMessage(`{"action":"decline"}`)}, false)
	if got := answer(t, c); got != "done" {
		t.Errorf("the call ended %q", got)
	}
}

// Item 7: with worker_user "{user}" (one account per user), a user name with ':' passed
// CheckUser, the judgement authentication makes, and then every launch refused it
// ("is not an account name"): the token was let in and every request got 503 with
// Retry-After, for ever. The launcher and the authentication check must agree: CheckUser
// applies the account lookup's own rules (worker.CheckAccountName).
func TestAttackWorkerUserNameRefusedByCheckUserAsByLaunch(t *testing.T) {
	l := &CommandLauncher{Command: []string{"/bin/true"}, WorkerUser: "{user}"}
	for _, name := range []string{"a:b", "svc:alice"} {
		if err := l.CheckUser(name); err != nil {
			var ue *UserNameError
			if !errors.As(err, &ue) || strings.Contains(err.Error(), name) {
				t.Errorf("user name %q refused as %v; want a UserNameError without the name", name, err)
			}
			continue // refused at authentication: consistent
		}
		_, err := l.Launch(t.Context(), Identity{Principal: auth.Principal{Issuer: "https://issuer.test", Subject: "sub", User: name}})
		if err != nil && strings.Contains(err.Error(), "is not an account name") {
			t.Errorf("user name %q passes CheckUser (authentication lets the token in) but every launch refuses it: %v", name, err)
		}
	}
}

// Item 2, during tools/list: the worker asks its client roots/list while it answers one
// session's tools/list (a call that cannot ask, so the request is no call's), while another
// session of the user has a tools/call in flight at the worker. That call is "the only call
// written that can ask", so the question is delivered on the other session's call, as its
// own (in the 2026-07-28 era, an input-required result of a tools/call that asked nothing).
func TestHoleRequestDuringToolsListGoesToAnotherSessionsCall(t *testing.T) {
	p, err := New(Options{Settings: Settings{WorkerPer: PerUser}, Launcher: envLauncher{env: []string{"POOL_TEST_ASK_AT_LIST=1"}}, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	a := attach(t, p, "alice", false, `{"roots":{}}`, newCaller(time.Now()))
	b := attach(t, p, "alice", false, `{"roots":{}}`, newCaller(time.Now().Add(-time.Hour)))
	held := b.tool(t, "hold", nil) // b's call, in flight at the worker
	defer held.Cancel("test over")
	list, err := a.call(t, "tools/list", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	answer(t, list)
	deadline := time.Now().Add(waitFor)
	for a.c.requests()+b.c.requests() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	for name, s := range map[string]*session{"a": a, "b": b} {
		s.c.mu.Lock()
		for _, d := range s.c.got {
			if d.Request && d.Call != nil {
				t.Errorf("the roots/list asked during session a's tools/list was delivered to session %s as its call's own (the held tools/call: %v)", name, d.Call == held)
			}
		}
		s.c.mu.Unlock()
	}
}

// Invariant 3 with two clients of one user: a question that belongs to the honest client's
// call is delivered to the other client whenever that one keeps a call of its own in flight
// at the shared worker (a long tool call, or a cancelled one the worker never answers: the
// TypeScript SDK's servers send nothing for an aborted request, so it stays in abandoned for
// the worker's life; maxAbandoned+1 of them switch attribution off for good, lostTrack).
// With two calls that can ask, gemgate names no owner and sends the question to the most
// recently active session with a stream, which the other client keeps by being busy; it
// answers (accepts) the honest client's confirmation with its own read-write token, and the
// honest call gets that answer. Ambiguity must fail safe (the call's own client or nobody),
// not pick a session.
func TestHoleAmbiguousQuestionGoesToAnotherClientOfTheUser(t *testing.T) {
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
			deadline := time.Now().Add(waitFor)
			for honest.c.requests()+other.c.requests() == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if other.c.requests() != 0 {
				_, req := other.c.request(t)
				_, err := other.m.Answer(&jsonrpc.Message{ID: req.ID, Result: json.RawMessage(`{"action":"accept","content":{}}`)}, false)
				t.Errorf("the honest client's confirmation was delivered to the user's other client, whose accept was taken (%v)", err)
				if got := answer(t, c); strings.Contains(got, `"accept"`) {
					t.Errorf("the honest client's call went ahead on the other client's answer: %s", got)
				}
				return
			}
			d, req := honest.c.request(t)
			if d.Call != c {
				t.Errorf("the honest client's confirmation was not delivered as its call's (call %p)", d.Call)
			}
			_, _ = honest.m.Answer(&jsonrpc.Message{ID: req.ID, Result: json.RawMessage(`{"action":"decline"}`)}, false)
			answer(t, c)
		})
	}
}
