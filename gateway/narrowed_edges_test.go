package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
)

// A read-only token may open the GET stream of a read-only session; when the user's
// read-write token steps the session up to read-write, that stream ends, as a read-only
// token may not listen to a read-write session (403 on open): it never carries the
// read-write worker's questions.
func TestReadOnlyTokensStreamEndsAtStepUp(t *testing.T) {
	f := newFixture(t)
	ro := f.client("alice-ro")
	openWithElicitation(t, ro)
	if ro.sessionObj().currentAccess().ReadOnly != true {
		t.Fatal("the session opened with the read-only token is not read-only")
	}
	st := ro.openStream() // allowed: the session is read-only
	rw := &client{f: f, token: "alice-rw", session: ro.session, version: ro.version}
	if r := rw.callTool("2", "write_note", map[string]any{"name": "n", "text": "x"}); r.status != http.StatusOK || r.only(t).Error != nil {
		t.Fatalf("write_note with the read-write token (step-up): %d %s", r.status, r.body)
	}
	if ro.sessionObj().currentAccess().ReadOnly {
		t.Fatal("the session did not step up")
	}
	// A read-only token opening the stream now is refused...
	if r := ro.refusedGET(t, "new GET with the read-only token after step-up", "Accept", "text/event-stream"); r.status != http.StatusForbidden {
		t.Fatalf("new GET with the read-only token after step-up: %d, want 403", r.status)
	}
	// ...but the one it opened before carries the read-write session's messages: the read-write
	// worker's question before a delete, asked of a read-write call whose POST takes JSON only.
	go rw.do(context.Background(), http.MethodPost, rpcBody(`"del"`, "tools/call",
		map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}}), "Accept", "application/json")
	var got []string
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		m, ok := st.next(time.Until(deadline))
		if !ok {
			break
		}
		got = append(got, m.Method)
		if m.Method == "elicitation/create" {
			t.Errorf("the read-only token's stream received the read-write worker's elicitation/create (%s) after the step-up", m.Params)
		}
	}
	if !st.ended(100 * time.Millisecond) {
		t.Errorf("the read-only token's GET stream, opened on the session while it was read-only, is still open after the session stepped up to read-write, and carried %q; want it ended (a read-only token may not listen to a read-write session: 403 on open)", got)
	}
}

// A read-only token on a read-write session is never asked the read-write worker's question,
// not even one asked during its own call of a read-only tool: ask_model (named in
// read_only_tools) asks its caller for a completion, and gemgate answers the worker itself
// with the answer that fails safe (sampling: an error), audited as gemgate's, instead of
// sending it down the read-only call's stream. (The rule before: a read-only token answered
// the questions of its own read-only calls; the call a question belongs to is only inferred,
// and a read-write call abandoned by its client could ask in its place.)
func TestReadOnlyTokenIsNotAskedOnReadWriteWorker(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		pol, err := policy.New(policy.Config{ReadOnlyTools: append(slices.Clone(demoReadOnlyTools), "ask_model")})
		if err != nil {
			t.Fatal(err)
		}
		o.Policy = pol
	})
	rw := f.client("alice-rw")
	params := initParams("2025-06-18")
	params["capabilities"] = map[string]any{"sampling": map[string]any{}}
	r := rw.rpc("1", "initialize", params)
	if r.status != http.StatusOK {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	rw.session, rw.version = r.header.Get(headerSessionID), "2025-06-18"
	rw.rpc("", "notifications/initialized", map[string]any{})
	ro := &client{f: f, token: "alice-ro", session: rw.session, version: rw.version}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp := ro.postStreaming(ctx, rpcBody(`"ask"`, "tools/call", map[string]any{"name": "ask_model", "arguments": map[string]any{"prompt": "hi"}}))
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("ask_model with the read-only token: %d", resp.StatusCode)
	}
	evs := readEvents(resp.Body)
	for done := false; !done; {
		ev, ok := nextEvent(t, evs)
		if !ok {
			t.Fatal("ask_model's stream ended without its answer")
		}
		m, err := jsonrpc.Parse([]byte(ev.data), jsonrpc.Options{})
		if err != nil {
			continue
		}
		if m.Method == "sampling/createMessage" {
			answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"hello"},"model":"m"}}`, m.ID)
			t.Errorf("the read-only token's call of ask_model was asked the read-write worker's sampling/createMessage; its answer: POST %d", ro.post(answer).status)
		}
		done = m.IsResponse()
	}
	waitLog(t, f, `"msg":"audit worker request"`, `"answered_by":"gemgate"`)
}

// A read-only token on a read-write session may not cancel the session's read-write calls:
// its notifications/cancelled of a delete_note waiting on its confirmation is refused 403
// insufficient_scope, and the call goes on.
func TestReadOnlyTokenCannotCancelReadWriteCall(t *testing.T) {
	f := newFixture(t)
	rw := f.client("alice-rw")
	openWithElicitation(t, rw)
	if r := rw.callTool("2", "write_note", map[string]any{"name": "doomed", "text": "x"}); r.status != http.StatusOK || r.only(t).Error != nil {
		t.Fatalf("write_note: %d %s", r.status, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp := rw.postStreaming(ctx, rpcBody(`"del"`, "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "doomed"}}))
	defer resp.Body.Close()
	evs := readEvents(resp.Body)
	for {
		ev, ok := nextEvent(t, evs)
		if !ok {
			t.Fatal("delete_note's stream ended without an elicitation")
		}
		if m, err := jsonrpc.Parse([]byte(ev.data), jsonrpc.Options{}); err == nil && m.Method == "elicitation/create" {
			break
		}
	}
	ro := &client{f: f, token: "alice-ro", session: rw.session, version: rw.version}
	st := ro.rpc("", "notifications/cancelled", map[string]any{"requestId": "del", "reason": "read-only token"}).status
	cancelled := false
	select {
	case _, ok := <-evs:
		cancelled = !ok
	case <-time.After(2 * time.Second):
	}
	if st != http.StatusForbidden || cancelled {
		t.Errorf("notifications/cancelled of the read-write delete_note with the read-only token: %d, the call's stream ended: %v; want 403 and the call going on", st, cancelled)
	}
}

// The same rule when the step-up comes while the read-only token's GET is between its gates
// and its stream (the user's clients race): the gates passed on a read-only session, and by
// the time the stream asks to end at a step-up the session is read-write already. The stream
// must end at once, not live on unwatched: a read-only token may not listen to a read-write
// session. The test runs handleGet's steps with the step-up between them.
func TestReadOnlyTokensStreamEndsAtStepUpDuringItsOpening(t *testing.T) {
	f := newFixture(t)
	ro := f.client("alice-ro")
	openWithElicitation(t, ro)
	rw := &client{f: f, token: "alice-rw", session: ro.session, version: ro.version}
	var gated bool
	var end context.Context
	h := f.gw.opts.Authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _, _, _ := f.gw.streamRequest(w, r)
		if s == nil {
			return
		}
		gated = true // the session is read-only: the read-only token may open its stream
		if r := rw.callTool("2", "write_note", map[string]any{"name": "n", "text": "x"}); r.status != http.StatusOK || r.only(t).Error != nil {
			t.Errorf("write_note with the read-write token (step-up): %d %s", r.status, r.body)
			return
		}
		if s.currentAccess().ReadOnly {
			t.Error("the session did not step up")
			return
		}
		p, _ := auth.PrincipalFrom(r.Context())
		end = f.gw.readWriteLater(s, p)
	}))
	req, err := ro.newRequest(t.Context(), http.MethodGet, nil, "Accept", "text/event-stream")
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if !gated {
		t.Fatalf("the read-only token's GET on the read-only session was refused: %d %s", rec.Code, rec.Body)
	}
	if end == nil || end.Err() == nil {
		t.Errorf("the read-only token's stream, gated while its session was read-only, is not ended although the session stepped up to read-write before the stream began (readWriteLater: %v)", end)
	}
}
