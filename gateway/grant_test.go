package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/pool"
)

// Tokens of one user (alice) that grant more or less than mcp:use mcp:write files:admin.
var grantTokens = testTokens{
	"alice-admin":    {Issuer: testIssuer, Subject: "sub-alice", User: "alice", Scopes: []string{"mcp:use", "mcp:write", "files:admin"}},
	"alice-rw":       {Issuer: testIssuer, Subject: "sub-alice", User: "alice", Scopes: []string{"mcp:use", "mcp:write"}},
	"alice-ro-admin": {Issuer: testIssuer, Subject: "sub-alice", User: "alice", Scopes: []string{"mcp:use", "files:admin"}},
	"alice-more":     {Issuer: testIssuer, Subject: "sub-alice", User: "alice", Scopes: []string{"files:admin", "mcp:use", "mcp:write", "files:audit"}},
}

// grantFixture serves grantTokens; per is how workers are shared, mode the worker program.
func grantFixture(t *testing.T, per, mode string) *fixture {
	return newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: per}
		o.Workers = &testLauncher{mode: mode, dataDir: t.TempDir()}
		authn := auth.NewAuthenticator(auth.AuthenticatorOptions{Verifier: grantTokens, ResourceMetadataURL: resourceMetadata, RequiredScopes: o.Policy.RequiredScopes()})
		o.Authenticate, o.InsufficientScope = authn.Middleware, authn.InsufficientScope
	})
}

// The refusal's text for a worker started with alice-admin, the same in both eras.
const adminGrantRefusal = "this token grants less than the token the worker serving this request was started with, " +
	"and a client never runs in a worker that holds more than its token grants: retry with a token granting the scopes " +
	"files:admin mcp:use mcp:write, or start over with this token (open a new session; for a 2026-07-28 call, send it again without its requestState)"

// checkGrantRefusal checks r is the 403 insufficient_scope of a token lacking files:admin on
// a worker started with alice-admin, with a challenge naming the worker's scopes.
func checkGrantRefusal(t *testing.T, what string, r reply) {
	t.Helper()
	if r.status != http.StatusForbidden {
		t.Fatalf("%s: %d %s, want 403", what, r.status, r.body)
	}
	ch := r.header.Get("WWW-Authenticate")
	if !strings.Contains(ch, `error="insufficient_scope"`) || !strings.Contains(ch, "files:admin") || !strings.Contains(ch, "mcp:use") {
		t.Errorf("%s: challenge %q, want insufficient_scope naming files:admin and mcp:use", what, ch)
	}
	if len(r.msgs) == 1 {
		e := rpcError(t, r.msgs[0])
		if e.Message != adminGrantRefusal {
			t.Errorf("%s: message %q\nwant %q", what, e.Message, adminGrantRefusal)
		}
		var data struct {
			Kind          string   `json:"kind"`
			Scopes        []string `json:"scopes"`
			MissingScopes []string `json:"missing_scopes"`
		}
		raw, _ := json.Marshal(e.Data)
		if err := json.Unmarshal(raw, &data); err != nil || data.Kind != kindGrant ||
			!slices.Equal(data.MissingScopes, []string{"files:admin"}) || !slices.Contains(data.Scopes, "files:admin") {
			t.Errorf("%s: error data %s", what, raw)
		}
	}
}

// grantRefusalsLogged counts the warnings of grant refusals.
func grantRefusalsLogged(t *testing.T, f *fixture) int {
	n := 0
	for _, rec := range f.log.records(t) {
		if rec["level"] == "WARN" && strings.Contains(rec["msg"].(string), "grants less than the worker") {
			n++
		}
	}
	return n
}

// A legacy session opened with a token granting files:admin stays with the worker told so
// (and, with a passed-through credential, holding that token). A later token of the session
// that lacks files:admin may not use that worker: its call, notification, answer, stream and
// DELETE are refused 403 insufficient_scope naming the worker's scopes, logged, and nothing
// reaches the worker (the note it tried to write is not there). A token granting more is
// served; a token lacking only the write scope is narrowed, as before.
func TestNarrowerGrantRefusedInLegacySession(t *testing.T) {
	f := grantFixture(t, pool.PerSession, "demo")
	admin := f.client("alice-admin")
	admin.open()
	narrow := &client{f: f, token: "alice-rw", session: admin.session, version: admin.version}

	checkGrantRefusal(t, "write_note", narrow.callTool("2", "write_note", map[string]any{"name": "narrow", "text": "x"}))
	checkGrantRefusal(t, "tools/list", narrow.rpc("3", "tools/list", map[string]any{}))
	checkGrantRefusal(t, "a notification", narrow.rpc("", "notifications/roots/list_changed", map[string]any{}))
	checkGrantRefusal(t, "an answer", narrow.post(`{"jsonrpc":"2.0","id":"gemgate-w1","result":{}}`))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := narrow.newRequest(ctx, http.MethodGet, nil, "Accept", "text/event-stream")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	checkGrantRefusal(t, "the GET stream", reply{status: resp.StatusCode, header: resp.Header})
	checkGrantRefusal(t, "DELETE", narrow.request(ctx, http.MethodDelete, ""))
	if n := grantRefusalsLogged(t, f); n != 6 {
		t.Errorf("%d grant refusals logged, want 6\nlogs:\n%s", n, f.log)
	}

	// The session is still there, and nothing of the narrower token reached its worker.
	r := admin.callTool("4", "read_note", map[string]any{"name": "narrow"})
	if r.status != http.StatusOK || !isToolError(r.only(t).Result) {
		t.Errorf("the narrower token's note reached the worker: %d %s", r.status, r.body)
	}
	more := &client{f: f, token: "alice-more", session: admin.session, version: admin.version}
	if r := more.callTool("5", "write_note", map[string]any{"name": "more", "text": "x"}); r.status != http.StatusOK || r.only(t).Error != nil || isToolError(r.only(t).Result) {
		t.Errorf("a token granting more: %d %s", r.status, r.body)
	}
	ro := &client{f: f, token: "alice-ro-admin", session: admin.session, version: admin.version}
	if r := ro.callTool("6", "read_note", map[string]any{"name": "more"}); r.status != http.StatusOK || r.only(t).Error != nil || isToolError(r.only(t).Result) {
		t.Errorf("a token lacking only the write scope, reading: %d %s", r.status, r.body)
	}
	if r := ro.callTool("7", "write_note", map[string]any{"name": "ro", "text": "x"}); r.status != http.StatusForbidden || strings.Contains(string(r.body), kindGrant) {
		t.Errorf("a token lacking only the write scope, writing: %d %s; want the read-only refusal", r.status, r.body)
	}
}

// A read-only session opened with files:admin steps up only with a token that grants
// files:admin as well: one lacking it is refused (the session stays read-only, its worker
// untouched), one granting it steps up.
func TestNarrowerGrantRefusedAtStepUp(t *testing.T) {
	f := grantFixture(t, pool.PerUser, "demo")
	ro := f.client("alice-ro-admin")
	ro.open()
	sess := f.gw.sessions.Lookup(ro.session, owner{testIssuer, "sub-alice"})
	before := sess.member.WorkerID()
	rw := &client{f: f, token: "alice-rw", session: ro.session, version: ro.version}
	checkGrantRefusal(t, "a step-up lacking files:admin", rw.callTool("2", "write_note", map[string]any{"name": "n", "text": "x"}))
	if now := sess.member.WorkerID(); now != before || !sess.currentAccess().ReadOnly {
		t.Errorf("the refused step-up moved the session: worker %s, was %s", now, before)
	}
	admin := &client{f: f, token: "alice-admin", session: ro.session, version: ro.version}
	if r := admin.callTool("3", "write_note", map[string]any{"name": "n", "text": "x"}); r.status != http.StatusOK || r.only(t).Error != nil || isToolError(r.only(t).Result) {
		t.Errorf("a step-up granting files:admin: %d %s", r.status, r.body)
	}
}

// A 2026-07-28 call parked by the input-required bridge at a worker started with files:admin
// is not resumed by a retry whose token lacks files:admin: the retry is refused as in a
// legacy session, with the same text, and the call stays parked, so that the retry with a
// token granting the worker's scopes finishes it.
func TestNarrowerGrantRefusedAtParkedRetry(t *testing.T) {
	f := grantFixture(t, pool.PerUser, "legacydemo")
	admin, narrow := f.client("alice-admin"), f.client("alice-rw")
	meta := func() map[string]any {
		m := sessionlessMeta()
		m[sessionless.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
		return m
	}
	if r := admin.sessionless("1", "tools/call", map[string]any{"name": "write_note", "arguments": map[string]any{"name": "n", "text": "x"}}); r.only(t).Error != nil {
		t.Fatalf("write_note: %s", r.body)
	}
	r := admin.sessionless("2", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": meta()})
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(r.only(t).Result, &res); err != nil || res.ResultType != "input_required" {
		t.Fatalf("delete_note: %s", r.body)
	}
	responses := map[string]any{}
	for k := range res.InputRequests {
		responses[k] = map[string]any{"action": "accept", "content": map[string]any{}}
	}
	retry := func(c *client, id string) reply {
		return c.sessionless(id, "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": meta(),
			"inputResponses": responses, "requestState": res.RequestState})
	}
	checkGrantRefusal(t, "the retry lacking files:admin", retry(narrow, "3"))
	if n := grantRefusalsLogged(t, f); n != 1 {
		t.Errorf("%d grant refusals logged, want 1", n)
	}
	if r := admin.sessionless("4", "tools/call", map[string]any{"name": "read_note", "arguments": map[string]any{"name": "n"}}); r.only(t).Error != nil || isToolError(r.only(t).Result) {
		t.Fatalf("the refused retry's accept deleted the note: %s", r.body)
	}
	if r := retry(admin, "5"); r.status != http.StatusOK || r.only(t).Error != nil || isToolError(r.only(t).Result) {
		t.Errorf("the retry granting files:admin: %d %s", r.status, r.body)
	}
	if r := admin.sessionless("6", "tools/call", map[string]any{"name": "read_note", "arguments": map[string]any{"name": "n"}}); !isToolError(r.only(t).Result) {
		t.Errorf("the accepted retry did not delete the note: %s", r.body)
	}
}

// What a worker holds that a token does not grant: scopes other than the write scope, and
// audiences; more is never a shortfall.
func TestGrantShortfall(t *testing.T) {
	worker := []string{"files:admin", "mcp:use", "mcp:write"}
	aud := []string{"https://gw.test/mcp", "urn:backend"}
	for _, tc := range []struct {
		name              string
		scopes, audiences []string
		lackS, lackA      []string
	}{
		{"the same", worker, aud, nil, nil},
		{"more", append([]string{"x"}, worker...), append([]string{"urn:more"}, aud...), nil, nil},
		{"no write scope", []string{"mcp:use", "files:admin"}, aud, nil, nil},
		{"fewer scopes", []string{"mcp:use", "mcp:write"}, aud, []string{"files:admin"}, nil},
		{"fewer audiences", worker, aud[:1], nil, []string{"urn:backend"}},
		{"other audiences", worker, []string{"urn:other"}, nil, aud},
	} {
		s, a := grantShortfall(worker, aud, tc.scopes, tc.audiences, "mcp:write")
		if !slices.Equal(s, tc.lackS) || !slices.Equal(a, tc.lackA) {
			t.Errorf("%s: lacks %v and %v, want %v and %v", tc.name, s, a, tc.lackS, tc.lackA)
		}
	}
}

// narrowerOnAdminSession opens a session with alice's admin token (a worker granted
// files:admin) and returns it, with a client of alice's narrower token on it.
func narrowerOnAdminSession(t *testing.T) (*session, *client) {
	t.Helper()
	f := grantFixture(t, pool.PerSession, "demo")
	admin := f.client("alice-admin")
	admin.open()
	s := f.gw.sessions.Lookup(admin.session, owner{testIssuer, "sub-alice"})
	if s == nil {
		t.Fatal("no session")
	}
	return s, &client{f: f, token: "alice-rw", session: admin.session, version: admin.version}
}

// A request a narrower token's grant refuses is not the session's activity: like its GET
// (sessionGates, which touches nothing), its POST leaves the idle clock, the stream-loss clock
// and a liveness probe in flight as they were. Else a token that may not use the session at
// all would keep it, and its worker, alive past the idle timeout.
func TestNarrowerGrantRefusalIsNotActivity(t *testing.T) {
	s, narrow := narrowerOnAdminSession(t)
	before := s.LastActive()
	time.Sleep(20 * time.Millisecond)
	checkGrantRefusal(t, "ping", narrow.rpc("2", "ping", map[string]any{}))
	checkGrantRefusal(t, "a notification", narrow.rpc("", "notifications/roots/list_changed", map[string]any{}))
	if after := s.LastActive(); !after.Equal(before) {
		t.Errorf("the refused requests of a token the session's grant refuses moved its idle clock by %v; want no change", after.Sub(before))
	}
}

// A session that is ending is gone for every token: a request whose token's grant it would
// refuse meets 404, as any other does, not a 403 that says to retry with another token.
func TestEndingSessionIsNotFoundWhateverTheGrant(t *testing.T) {
	s, narrow := narrowerOnAdminSession(t)
	s.mu.Lock()
	s.ending = true // the reaper's claim (markEnding), before it ends the session
	s.mu.Unlock()
	if r := narrow.rpc("2", "ping", map[string]any{}); r.status != http.StatusNotFound {
		t.Errorf("a narrower token's request to an ending session: %d %s, want 404", r.status, r.body)
	}
}
