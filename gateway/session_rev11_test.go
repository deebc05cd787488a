package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// openWithElicitation initializes c's session declaring the elicitation capability, as a
// client that can confirm a delete_note does.
func openWithElicitation(t *testing.T, c *client) {
	t.Helper()
	params := initParams("2025-06-18")
	params["capabilities"] = map[string]any{"elicitation": map[string]any{}}
	r := c.rpc("1", "initialize", params)
	if r.status != http.StatusOK || r.header.Get(headerSessionID) == "" {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	c.session, c.version = r.header.Get(headerSessionID), "2025-06-18"
	if n := c.rpc("", "notifications/initialized", map[string]any{}); n.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d", n.status)
	}
}

// TestRev11ReadOnlyTokenAnswersReadWriteElicitation: a read-write session's delete_note asks
// its client for confirmation (elicitation/create, on the call's own SSE stream). The user's
// read-only token, presented on the same session, answers it "accept", and the write goes
// through: a token that may not call delete_note decides whether it runs. In the 2026-07-28
// era the same retry is refused (docs/eras.md: "another access mode's (a read-only token of
// the same user) ... is refused with 400, -32602 ... so a read-only token cannot turn a retry
// into a write"); in a legacy session, a client's answer to a worker request reaches the
// read-write worker with no access check at all (postMessage -> session.clientResponse).
func TestRev11ReadOnlyTokenAnswersReadWriteElicitation(t *testing.T) {
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
		m, err := jsonrpc.Parse([]byte(ev.data))
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
	roStatus := ro.post(answer).status
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
		if m, err := jsonrpc.Parse([]byte(ev.data)); err == nil && m.IsResponse() {
			final = m
		}
	}
	if got := toolText(t, final); strings.Contains(got, "deleted note") {
		t.Errorf("a read-only token's answer (POST %d) confirmed a read-write delete_note: %q; want the answer refused (as the modern era refuses another access mode's retry) and the note kept", roStatus, got)
	}
}

// TestRev11LastEventIDOddSpellings: Last-Event-ID values that are not an id gemgate wrote,
// spelled around a real one, are all 400 with data.kind last_event_id, and the session and
// its stream go on. (Signs, unicode digits, overflow, empty parts, an extra separator, the
// tag in upper case, over the length bound.)
func TestRev11LastEventIDOddSpellings(t *testing.T) {
	f := newFixture(t)
	a := f.client("alice-rw")
	a.open()
	r := a.callTool("1", "echo", map[string]any{"text": "x"})
	var id string
	for ev := range readEvents(strings.NewReader(string(r.body))) {
		if ev.id != "" {
			id = ev.id
		}
	}
	parts := strings.Split(id, "_")
	if len(parts) != 3 {
		t.Fatalf("event id %q is not tag_stream_seq", id)
	}
	tag, sid, seq := parts[0], parts[1], parts[2]
	odd := []string{
		tag + "_+" + sid + "_" + seq,
		tag + "_" + sid + "_+" + seq,
		tag + "_-" + sid + "_" + seq,
		tag + "_" + sid + "_-1",
		tag + "_" + sid + "_١", // ARABIC-INDIC DIGIT ONE
		tag + "_" + sid + "_１", // FULLWIDTH DIGIT ONE
		tag + "_" + sid + "_18446744073709551616",
		tag + "_" + sid + "_18446744073709551615",
		tag + "_18446744073709551615_0",
		tag + "_" + sid + "_",
		tag + "__" + seq,
		"_" + sid + "_" + seq,
		tag + "_" + sid + "_" + seq + "_",
		tag + "_" + sid + "_" + seq + "_" + seq,
		strings.ToUpper(tag) + "_" + sid + "_" + seq,
		tag + "_" + sid + "_1e0",
		tag + "_" + sid + "_0x1",
		tag + "_" + sid + "_1_0",
		tag + "_" + sid + "_" + strings.Repeat("0", 64) + seq,
		tag + "\u00a0_" + sid + "_" + seq,
		tag + "_" + sid + " _" + seq,
	}
	for _, last := range odd {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, err := a.newRequest(ctx, http.MethodGet, nil, "Accept", "text/event-stream", "Last-Event-ID", last)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("%q: %v", last, err)
		}
		var body struct {
			Error struct {
				Data struct{ Kind string } `json:"data"`
			} `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusBadRequest || body.Error.Data.Kind != "last_event_id" {
			t.Errorf("Last-Event-ID %q: status %d kind %q, want 400 last_event_id", last, resp.StatusCode, body.Error.Data.Kind)
		}
	}
	if r := a.callTool("2", "echo", map[string]any{"text": "still"}); r.status != http.StatusOK || toolText(t, r.only(t)) != "still" {
		t.Errorf("the session after odd resumptions: %d %s", r.status, r.body)
	}
}

// TestRev11DeleteRacingCallsAnswersEveryCall: a session with calls in flight (some of them
// still on their way to the worker) is DELETEd, many times at once; every call gets exactly
// one answer carrying its own id (the session's end, or 404), none hangs, and the session is
// gone for every later request.
func TestRev11DeleteRacingCallsAnswersEveryCall(t *testing.T) {
	for _, per := range []string{pool.PerSession, pool.PerUser} {
		t.Run(per, func(t *testing.T) {
			f := newFixture(t, func(o *Options) { o.Pool = pool.Settings{WorkerPer: per} })
			c := f.client("alice-rw")
			c.open()
			const calls = 12
			var wg sync.WaitGroup
			errs := make(chan error, calls+8)
			for i := range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					id := fmt.Sprintf(`"c%d"`, i)
					r, err := c.do(ctx, http.MethodPost, rpcBody(id, "tools/call", slowParams(2, true, "t"+id[1:len(id)-1])))
					if err != nil {
						errs <- fmt.Errorf("call %s: %w", id, err)
						return
					}
					if r.status == http.StatusNotFound {
						return
					}
					var answers int
					for _, m := range r.msgs {
						if m.IsResponse() {
							answers++
							if string(m.ID) != id {
								errs <- fmt.Errorf("call %s answered with id %s", id, m.ID)
							}
						}
					}
					if answers != 1 {
						errs <- fmt.Errorf("call %s: %d answers (status %d): %s", id, answers, r.status, r.body)
					}
				}()
			}
			time.Sleep(300 * time.Millisecond)
			var deletes sync.WaitGroup
			codes := make(chan int, 8)
			for range 8 {
				deletes.Add(1)
				go func() {
					defer deletes.Done()
					r, err := c.do(context.Background(), http.MethodDelete, "")
					if err != nil {
						errs <- err
						return
					}
					codes <- r.status
				}()
			}
			deletes.Wait()
			close(codes)
			ok := 0
			for code := range codes {
				switch code {
				case http.StatusOK:
					ok++
				case http.StatusNotFound:
				default:
					t.Errorf("DELETE racing DELETE: %d", code)
				}
			}
			if ok != 1 {
				t.Errorf("%d DELETEs answered 200, want exactly 1", ok)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if r := c.rpc("99", "ping", map[string]any{}); r.status != http.StatusNotFound {
				t.Errorf("POST after DELETE: %d, want 404", r.status)
			}
		})
	}
}

// expiringTokens is the test token table plus "alice-short", alice's read-write token that
// is valid until deadline and refused as expired after it.
type expiringTokens struct {
	testTokens
	deadline time.Time
}

func (e expiringTokens) Verify(ctx context.Context, raw string) (auth.Principal, error) {
	if raw == "alice-short" {
		if time.Now().After(e.deadline) {
			return auth.Principal{}, fmt.Errorf("%w: token expired", auth.ErrInvalidToken)
		}
		p, _ := e.testTokens.Verify(ctx, "alice-rw")
		p.Expiry = e.deadline
		return p, nil
	}
	return e.testTokens.Verify(ctx, raw)
}

// TestRev11StreamOutlivesItsToken: DESIGN §4 "each request needs a live token", security.md
// "every request to /mcp needs its own valid bearer token", invariant 4 "a session ... is
// reachable only with a valid token of their subject". A GET stream opened with a token
// that then expires (or, with JWTs, is no longer renewed because the user was disabled)
// keeps receiving the session's messages for as long as the connection lasts: the keepalive
// comment every 15 s keeps it open for hours. Nothing checks the token's exp after the
// stream was admitted; the session's principal carries Expiry, and it is never used.
func TestRev11StreamOutlivesItsToken(t *testing.T) {
	deadline := time.Now().Add(1500 * time.Millisecond)
	f := newFixture(t, func(o *Options) {
		pol := o.Policy
		authn := auth.NewAuthenticator(auth.AuthenticatorOptions{
			Verifier: expiringTokens{tokens, deadline}, ResourceMetadataURL: resourceMetadata, RequiredScopes: pol.RequiredScopes(),
		})
		o.Authenticate, o.InsufficientScope = authn.Middleware, authn.InsufficientScope
	})
	c := f.client("alice-rw")
	c.open()
	short := &client{f: f, token: "alice-short", session: c.session, version: c.version}
	st := short.openStream()
	time.Sleep(time.Until(deadline) + 500*time.Millisecond)
	if r := short.rpc("5", "ping", map[string]any{}); r.status != http.StatusUnauthorized {
		t.Fatalf("the short token after its expiry: %d, want 401", r.status)
	}
	// The session goes on with a fresh token, as DESIGN §4 allows; its messages go to the
	// stream the expired token opened.
	if r := c.callTool("6", "toggle_extra_tool", map[string]any{}); r.status != http.StatusOK || r.only(t).Error != nil {
		t.Fatalf("toggle_extra_tool: %d %s", r.status, r.body)
	}
	for {
		m, ok := st.next(3 * time.Second)
		if !ok {
			return // the stream ended (or carried nothing): the expired token reads nothing
		}
		if m.Method == "notifications/tools/list_changed" {
			t.Errorf("a GET stream opened with a token that expired %v ago still receives the session's messages (%s); want it ended at the token's expiry", time.Since(deadline).Round(time.Millisecond), m.Method)
			return
		}
	}
}

// TestRev11ReadOnlyTokenReadsReadWriteSessionStream: the same gap on GET. A read-write
// session's GET stream opened with the user's read-only token is served, and the read-write
// worker's requests (here delete_note's elicitation/create, which names the note to be
// deleted) go down it. In the 2026-07-28 era a listen stream "belongs to one (issuer,
// subject, access mode)" (docs/eras.md), and a parked call's state is refused to another
// access mode; a legacy session checks only (issuer, subject) (table.lookup), whatever the
// token's access, on GET, POST answers and DELETE.
func TestRev11ReadOnlyTokenReadsReadWriteSessionStream(t *testing.T) {
	f := newFixture(t)
	rw := f.client("alice-rw")
	openWithElicitation(t, rw)
	if r := rw.callTool("2", "write_note", map[string]any{"name": "secret-plan", "text": "x"}); r.status != http.StatusOK || r.only(t).Error != nil {
		t.Fatalf("write_note: %d %s", r.status, r.body)
	}
	ro := &client{f: f, token: "alice-ro", session: rw.session, version: rw.version}
	st := ro.openStream() // fails the test unless 200: the read-only token is let in
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		rw.do(ctx, http.MethodPost, rpcBody(`"del"`, "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "secret-plan"}}))
	}()
	defer func() { cancel(); <-done }()
	for {
		m, ok := st.next(5 * time.Second)
		if !ok {
			return
		}
		if m.Method == "elicitation/create" {
			t.Errorf("a GET stream opened with a read-only token on a read-write session received the read-write worker's request: %s", m.Params)
			rw.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"decline"}}`, m.ID))
			return
		}
	}
}

// lookalikeTokens adds tokens of subjects that differ from alice's ("sub-alice") only by
// case, white space, a zero-width character, a homoglyph or Unicode normalization, each its
// own user claim spelled likewise.
type lookalikeTokens struct{ testTokens }

var lookalikeSubjects = map[string]string{
	"upper":    "SUB-ALICE",
	"title":    "Sub-Alice",
	"trailing": "sub-alice ",
	"zwsp":     "sub-alice\u200b",
	"cyrillic": "sub-ali\u0441e",
	"nfd":      "sub-alice\u0301", // a combining acute after e: é in NFD, a different string from NFC
}

func (l lookalikeTokens) Verify(ctx context.Context, raw string) (auth.Principal, error) {
	if sub, ok := lookalikeSubjects[raw]; ok {
		return auth.Principal{Issuer: testIssuer, Subject: sub, User: strings.Replace(sub, "sub-", "", 1), Scopes: []string{"mcp:use", "mcp:write"}}, nil
	}
	return l.testTokens.Verify(ctx, raw)
}

// TestRev11LookalikeSubjectsAreOtherUsers: a session belongs to (issuer, subject) compared
// byte for byte. A subject that differs from the owner's by case, white space, a zero-width
// character, a homoglyph or normalization is another user: 404 on POST, GET and DELETE of
// the owner's session, and a per-user worker of its own.
func TestRev11LookalikeSubjectsAreOtherUsers(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		authn := auth.NewAuthenticator(auth.AuthenticatorOptions{
			Verifier: lookalikeTokens{tokens}, ResourceMetadataURL: resourceMetadata, RequiredScopes: o.Policy.RequiredScopes(),
		})
		o.Authenticate, o.InsufficientScope = authn.Middleware, authn.InsufficientScope
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
	})
	alice := f.client("alice-rw")
	alice.open()
	alicePid := alice.sessionObj().member.WorkerPid()
	for name := range lookalikeSubjects {
		t.Run(name, func(t *testing.T) {
			m := &client{f: f, token: name, session: alice.session, version: alice.version}
			for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
				body := ""
				if method == http.MethodPost {
					body = rpcBody("9", "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}})
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				r, err := m.do(ctx, method, body)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				if r.status != http.StatusNotFound {
					t.Errorf("%s on alice's session: %d, want 404", method, r.status)
				}
			}
			own := f.client(name)
			own.open()
			if pid := f.gw.sessions.lookup(own.session, owner{testIssuer, lookalikeSubjects[name]}).member.WorkerPid(); pid == alicePid {
				t.Errorf("subject %q shares alice's worker %d", lookalikeSubjects[name], pid)
			}
			own.request(context.Background(), http.MethodDelete, "")
		})
	}
	if r := alice.callTool("10", "whoami", map[string]any{}); r.status != http.StatusOK || !strings.Contains(toolText(t, r.only(t)), "user=alice ") {
		t.Errorf("alice after the lookalikes: %d %s", r.status, r.body)
	}
}

// TestRev11ReadOnlyTokenEndsReadWriteSession: with worker_per: session, DELETE stops the
// session's worker, and for GemStone "uncommitted work in that session is lost"
// (docs/session-lifetime.md). The user's read-only token, which may not call a single write
// tool on the session, may DELETE it, and so throw away what the read-write client wrote and
// had not committed. Same root as TestRev11ReadOnlyTokenAnswersReadWriteElicitation: a
// legacy session checks (issuer, subject) only, never the token's access.
func TestRev11ReadOnlyTokenEndsReadWriteSession(t *testing.T) {
	f := newFixture(t) // worker_per: session
	rw := f.client("alice-rw")
	rw.open()
	pid := rw.sessionObj().member.WorkerPid()
	ro := &client{f: f, token: "alice-ro", session: rw.session, version: rw.version}
	if r := ro.callTool("2", "write_note", map[string]any{"name": "n", "text": "x"}); r.status != http.StatusForbidden {
		t.Fatalf("the read-only token's write on the session: %d, want 403", r.status)
	}
	r := ro.request(context.Background(), http.MethodDelete, "")
	if r.status == http.StatusOK {
		t.Errorf("DELETE of a read-write session with the read-only token: 200, the session ended (worker %d alive: %v); want it refused (403 insufficient_scope) as the token's write calls are", pid, alive(pid))
	}
}
