package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// openWithElicitation initializes c's session declaring the elicitation capability, as a
// client that can confirm a delete_note does.
func openWithElicitation(t *testing.T, c *client) {
	t.Helper()
	params := initParams("2025-11-25")
	params["capabilities"] = map[string]any{"elicitation": map[string]any{}}
	r := c.rpc("1", "initialize", params)
	if r.status != http.StatusOK || r.header.Get(headerSessionID) == "" {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	c.session, c.version = r.header.Get(headerSessionID), "2025-11-25"
	if n := c.rpc("", "notifications/initialized", map[string]any{}); n.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d", n.status)
	}
}

// A read-write session's delete_note asks its client for confirmation (elicitation/create,
// on the call's own SSE stream). The user's read-only token, presented on the same session,
// may not answer it: its "accept" would decide whether a write it could not call goes ahead.
// It is refused 403 (as the 2026-07-28 era refuses another access mode's retry), and the
// read-write client's own answer decides.
func TestReadOnlyTokenCannotAnswerReadWriteWorker(t *testing.T) {
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
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("delete_note: %d", resp.StatusCode)
	}
	evs := readEvents(resp.Body)
	var ask *jsonrpc.Message
	for ask == nil {
		ev, ok := nextEvent(t, evs)
		if !ok {
			t.Fatal("delete_note's stream ended without an elicitation")
		}
		if ev.data == "" {
			continue
		}
		m, err := jsonrpc.Parse([]byte(ev.data), jsonrpc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if m.Method == "elicitation/create" {
			ask = m
		} else if m.IsResponse() {
			t.Fatalf("delete_note answered before asking: %s", ev.data)
		}
	}

	ro := &client{f: f, token: "alice-ro", session: rw.session, version: rw.version}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{}}}`, ask.ID)
	roReply := ro.post(answer)
	roStatus := roReply.status
	// The same refusal, with the same text, as a 2026-07-28 retry's of a read-write worker's
	// question (TestBridgeRetryOfAnotherAccessModeIsAnsweredAsInASession).
	if roStatus == http.StatusForbidden && !strings.Contains(string(roReply.body), "the worker that asked is read-write and this token may only read") {
		t.Errorf("the read-only token's answer was refused with %s; want the text a 2026-07-28 retry gets", roReply.body)
	}
	if roStatus != http.StatusAccepted {
		// Refused: the read-write client declines, so that the call ends.
		rw.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"decline"}}`, ask.ID))
	}
	var final *jsonrpc.Message
	for final == nil {
		ev, ok := nextEvent(t, evs)
		if !ok {
			t.Fatal("delete_note's stream ended without its answer")
		}
		if m, err := jsonrpc.Parse([]byte(ev.data), jsonrpc.Options{}); err == nil && m.IsResponse() {
			final = m
		}
	}
	if got := toolText(t, final); strings.Contains(got, "deleted note") || roStatus != http.StatusForbidden {
		t.Errorf("a read-only token's answer (POST %d) to a read-write delete_note's question, which ended %q; want it refused 403 and the note kept", roStatus, got)
	}
}

// The session's GET stream carries the read-write worker's questions (an elicitation before
// a delete), which a read-only token may not answer: it may not open the stream either. It
// gets 403 with the challenge for the write scope, and the read-write token's stream opens.
func TestReadOnlyTokenCannotListenToReadWriteSession(t *testing.T) {
	f := newFixture(t)
	rw := f.client("alice-rw")
	openWithElicitation(t, rw)
	ro := &client{f: f, token: "alice-ro", session: rw.session, version: rw.version}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := ro.newRequest(ctx, http.MethodGet, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // not read: a stream let in would not end
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "insufficient_scope") {
		t.Fatalf("GET of a read-write session with the read-only token: %d, WWW-Authenticate %q; want 403 insufficient_scope", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	rw.openStream() // fails the test unless 200
}

// Ending a read-write session throws away what its worker holds (with a worker per session,
// the worker and its uncommitted work): a read-only token, whose writes on the session are
// refused, may not end it either. The read-write token may.
func TestReadOnlyTokenCannotEndReadWriteSession(t *testing.T) {
	f := newFixture(t) // worker_per: session
	rw := f.client("alice-rw")
	rw.open()
	pid := rw.sessionObj().member.WorkerPid()
	ro := &client{f: f, token: "alice-ro", session: rw.session, version: rw.version}
	if r := ro.callTool("2", "write_note", map[string]any{"name": "n", "text": "x"}); r.status != http.StatusForbidden {
		t.Fatalf("the read-only token's write on the session: %d, want 403", r.status)
	}
	r := ro.request(context.Background(), http.MethodDelete, "")
	if r.status != http.StatusForbidden || !alive(pid) {
		t.Errorf("DELETE of a read-write session with the read-only token: %d (worker %d alive: %v); want 403 insufficient_scope, as the token's write calls are", r.status, pid, alive(pid))
	}
	if r := rw.callTool("3", "write_note", map[string]any{"name": "n", "text": "x"}); r.status != http.StatusOK || r.only(t).Error != nil {
		t.Errorf("the session's own write after the refused DELETE: %d %s", r.status, r.body)
	}
	if r := rw.request(context.Background(), http.MethodDelete, ""); r.status != http.StatusOK {
		t.Errorf("DELETE with the read-write token: %d, want 200", r.status)
	}
}
