package test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Attacks on the fixes of issue 35 (items 4 and 8) against the real binary, as a hostile
// client or a second account would try them.

// Item 3, the bearer token of the request itself: with trace_messages, a token the worker
// does not hold (any token with worker_credential none; with passthrough, the client's
// refreshed token, while the worker holds the one that opened the session) is traced on none
// of the lines that carry the request's bytes on (to_worker) and back (from_worker,
// gateway_to_client), as it is not on the client_to_gateway line: every JWS-shaped string is
// taken out of the trace. The demo's echo tool stands for any tool that quotes an argument
// (an error message naming a bad value, a note read back).
func TestAttackTraceQuotesNoBearerOnAnyLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"credential none", nil},
		{"passthrough, refreshed token", []string{"--worker-credential", "passthrough"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startDev(t, append([]string{"--trace-messages"}, tc.flags...)...)
			opener := rawClient{t: t, url: g.URL, token: g.Tokens["alice"]}
			session := opener.initialize()
			token := puToken(t, g, "alice", "mcp:use mcp:write") // alice's next token, same subject
			c := rawClient{t: t, url: g.URL, token: token}
			call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + token + `"}}}`
			r := c.do("POST", session, []byte(call), nil)
			if msgs := r.messages(t); r.status != http.StatusOK || len(msgs) == 0 || !strings.Contains(string(msgs[len(msgs)-1].Result), token) {
				t.Fatalf("echo of the token: status %d, body %.300s", r.status, r.body)
			}
			sig := token[strings.LastIndexByte(token, '.')+1:]
			pollUntil(t, 10*time.Second, "the answer's trace line", func() bool {
				for _, e := range g.logEvents("trace") {
					if e["direction"] == "gateway_to_client" && strings.Contains(fmtAny(e["body"]), "\"id\":7") {
						return true
					}
				}
				return false
			})
			for _, e := range g.logEvents("trace") {
				if strings.Contains(fmtAny(e["body"]), sig) {
					t.Errorf("the %v trace line holds the request's bearer token", e["direction"])
				}
			}
		})
	}
}

func fmtAny(v any) string {
	s, _ := v.(string)
	return s
}

// Item 1, 2026-07-28 era: alice's read-write delete_note asks for its confirmation (an
// input-required result; the demo speaks 2026-07-28 itself and keeps no requestState). Her
// read-only token retries it with the confirmation's key in inputResponses, "accept" (with
// the state, had there been one, and without): refused, and the note stays (the retry is a
// request of its own, gated by the policy, and a read-only token's reaches only her
// read-only worker). Her read-write token's
// decline then leaves the note too.
func TestHeldSessionlessReadOnlyRetryCannotConfirm(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	rw, ro := g.Tokens["alice"], puToken(t, g, "alice", "mcp:use")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	caps := map[string]any{"elicitation": map[string]any{}}
	call := func(token, id, tool string, args map[string]any, extra map[string]any) (int, map[string]json.RawMessage) {
		params := map[string]any{"name": tool, "arguments": args}
		for k, v := range extra {
			params[k] = v
		}
		return sessionlessAsk(ctx, g.URL, token, id, "tools/call", params, caps)
	}
	if code, out := call(rw, `"w"`, "write_note", map[string]any{"name": "keep", "text": "precious"}, nil); code != http.StatusOK || out["error"] != nil || strings.Contains(string(out["result"]), `"isError":true`) {
		t.Fatalf("write_note: %d %s", code, jsonText(out))
	}
	code, out := call(rw, `"d1"`, "delete_note", map[string]any{"name": "keep"}, nil)
	var ir struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if code != http.StatusOK || json.Unmarshal(out["result"], &ir) != nil || ir.ResultType != "input_required" || len(ir.InputRequests) == 0 {
		t.Fatalf("delete_note did not ask for its confirmation: %d %s", code, jsonText(out))
	}
	accept := map[string]any{}
	for key := range ir.InputRequests {
		accept[key] = map[string]any{"action": "accept", "content": map[string]any{}}
	}
	withState := func(m map[string]any) map[string]any {
		if ir.RequestState != "" { // the demo, a 2026-07-28 server itself, keeps no state
			m["requestState"] = ir.RequestState
		}
		return m
	}
	for i, extra := range []map[string]any{
		withState(map[string]any{"inputResponses": accept}),
		{"inputResponses": accept},
	} {
		code, out := call(ro, `"d2"`, "delete_note", map[string]any{"name": "keep"}, extra)
		if code == http.StatusOK && out["error"] == nil && strings.Contains(string(out["result"]), "deleted note") {
			t.Fatalf("retry %d with the read-only token deleted the note: %s", i, jsonText(out))
		}
	}
	if code, out := call(rw, `"r"`, "read_note", map[string]any{"name": "keep"}, nil); code != http.StatusOK || !strings.Contains(string(out["result"]), "precious") {
		t.Fatalf("the note after the read-only retries: %d %s", code, jsonText(out))
	}
	decline := map[string]any{}
	for key := range ir.InputRequests {
		decline[key] = map[string]any{"action": "decline"}
	}
	if code, out := call(rw, `"d3"`, "delete_note", map[string]any{"name": "keep"}, withState(map[string]any{"inputResponses": decline})); code != http.StatusOK || strings.Contains(string(out["result"]), "deleted note") {
		t.Errorf("the read-write decline: %d %s", code, jsonText(out))
	}
}

// Item 7, the differential: with worker_user "{user}" (one account per user; gemgate runs as
// root), a user name with ':' passed the check authentication makes (CheckUser), and then
// every worker start refused it (worker.lookupAccount: "is not an account name"). The token
// was let in and got 503 with Retry-After, for ever, which item 7 set out to end: it is
// refused at authentication, 403 without Retry-After, as "-rf" or "a/b" are (CheckUser
// applies the lookup's own rules, worker.CheckAccountName).
func TestAttackWorkerUserNameWithColonRefusedAtAuthentication(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	g := startServe(t, "--issuer", iss.URL(), "--user-claim", "preferred_username",
		"--worker", "command", "--worker-command", buildTestdata(t, "credworker"), "--worker-user", "{user}")
	tok := iss.mint(with(iss.claims(g.URL, "sub-colon", "mcp:use mcp:write"), func(c map[string]any) { c["preferred_username"] = "svc:alice" }))
	for attempt := range 2 {
		code, h := identityInit(t, g.URL, tok)
		if code != http.StatusForbidden || h.Get("Retry-After") != "" {
			t.Errorf("attempt %d of user name \"svc:alice\": status %d, Retry-After %q; want 403 and none (refused at authentication)", attempt+1, code, h.Get("Retry-After"))
		}
	}
}

// Item 1 between two clients of one user: the honest client calls peek, which asks for a
// confirmation on its own POST stream, while the user's other client keeps a call of its own
// in flight (delete) and a GET stream open. Two calls of two clients could have asked, so the
// question is asked of neither: it once went to the other client's GET stream, whose accept
// (a read-write token of the same user: access not widened) let the honest client's call go
// ahead on an answer from a client it was never asked of. The worker gets gemgate's cancel.
func TestAttackQuestionOfOneClientIsAskedOfNoOther(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--worker-command", stubbornWorker(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	caps := map[string]any{"elicitation": map[string]any{}}
	honest := ltOpen(t, g, g.Tokens["alice"], caps)
	other := ltOpen(t, g, g.Tokens["alice"], caps)
	_, events := other.stream(ctx)
	busy := puPost(ctx, other, "busy", "tools/call", map[string]any{"name": "delete", "arguments": map[string]any{}})
	ltWaitLog(t, g, "stubborn: deleting", 20*time.Second)
	peek := puPost(ctx, honest, "peek", "tools/call", map[string]any{"name": "peek", "arguments": map[string]any{}})
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		for m := range events {
			if m.Method == "elicitation/create" {
				other.respond(m.ID, map[string]any{"action": "accept", "content": map[string]any{}})
				return
			}
		}
	}()
	var got ltMsg
	for m := range peek {
		if m.Method == "" && (len(m.ID) > 0 || m.Error != nil) {
			got = m
		}
	}
	select {
	case <-answered:
		t.Errorf("the honest client's question was delivered on the other client's GET stream and answered there; the honest peek ended %s", got.Result)
	default:
	}
	if strings.Contains(string(got.Result), "accept") {
		t.Errorf("the honest client's call went ahead on the other client's accept: %s", got.Result)
	}
	cancel()
	for range busy {
	}
}
