package test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The attacks on who a worker acts as, through the real binary: a second subject carrying a
// user name another holds, a user name no worker can act as, and a client with fewer scopes
// than the token that started a shared worker.

// identityInit posts initialize with token and returns the status and headers.
func identityInit(t *testing.T, url, token string) (int, http.Header) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"attack","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// credEnv is what testdata/credworker's env tool reports.
type credEnv struct {
	User         string   `json:"user"`
	Subject      string   `json:"subject"`
	Scopes       string   `json:"scopes"`
	ReadOnly     string   `json:"read_only"`
	Args         []string `json:"args"`
	CredentialSH string   `json:"credential_sha256"`
}

func envOf(t *testing.T, url, token string) credEnv {
	t.Helper()
	cs := connect(t, url, token, nil)
	defer cs.Close()
	var e credEnv
	if err := json.Unmarshal([]byte(text(callTool(t, cs, "env", nil))), &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// refusedForGood checks the answer of a token gemgate will never serve: 403 with
// error="invalid_token" and no Retry-After, at the first request and the next.
func refusedForGood(t *testing.T, url, token, what string) {
	t.Helper()
	for attempt := range 2 {
		code, h := identityInit(t, url, token)
		if code != http.StatusForbidden || h.Get("Retry-After") != "" {
			t.Fatalf("%s, attempt %d: status %d, Retry-After %q; want 403 and none", what, attempt+1, code, h.Get("Retry-After"))
		}
		if c := parseChallenge(t, h.Get("WWW-Authenticate")); c["error"] != "invalid_token" {
			t.Fatalf("%s: challenge %v, want error=invalid_token", what, c)
		}
	}
}

// TestAttackIdentitySecondSubjectSameName: with user_claim preferred_username, a second
// subject whose token carries the name of the first is refused (403, not retried) with a
// warning that names both subjects and not the token; it never gets a worker acting as the
// first one's user. The first subject goes on being served; the second with a name of its
// own is served too.
func TestAttackIdentitySecondSubjectSameName(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	g := startServe(t, "--issuer", iss.URL(), "--user-claim", "preferred_username",
		"--worker", "command", "--worker-command", buildTestdata(t, "credworker"))
	token := func(sub, name string) string {
		return iss.mint(with(iss.claims(g.URL, sub, "mcp:use mcp:write"), func(c map[string]any) { c["preferred_username"] = name }))
	}
	first, second := token("sub-first", "alice"), token("sub-second", "alice")
	if e := envOf(t, g.URL, first); e.User != "alice" || e.Subject != "sub-first" {
		t.Fatalf("first subject's worker: %+v", e)
	}
	refusedForGood(t, g.URL, second, "a second subject named alice")
	pollUntil(t, 10*time.Second, "the warning naming both subjects", func() bool {
		for _, line := range strings.Split(g.logs.String(), "\n") {
			if strings.Contains(line, `"reason":"user_taken"`) && strings.Contains(line, `"level":"WARN"`) &&
				strings.Contains(line, `sub-second`) && strings.Contains(line, `sub-first`) {
				return true
			}
		}
		return false
	})
	if strings.Contains(g.logs.String(), second) || strings.Contains(g.logs.String(), first) {
		t.Error("the log carries a token")
	}
	if e := envOf(t, g.URL, first); e.User != "alice" || e.Subject != "sub-first" {
		t.Errorf("first subject after the refusal: %+v", e)
	}
	if e := envOf(t, g.URL, token("sub-second", "alice-2")); e.User != "alice-2" || e.Subject != "sub-second" {
		t.Errorf("second subject with a name of its own: %+v", e)
	}
}

// TestAttackIdentityUnusableUserName: with {user} in worker_command, a token whose user name
// cannot go on a command line or into an environment is refused at authentication, 403 with
// no Retry-After, every time, with the reason in the log; it was a 503 with Retry-After that
// clients retried for ever. A good name is served as before.
func TestAttackIdentityUnusableUserName(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	g := startServe(t, "--issuer", iss.URL(), "--user-claim", "preferred_username",
		"--worker", "command", "--worker-command", buildTestdata(t, "credworker")+" --user {user}")
	for i, name := range []string{"-rf", "..", ".", "a/b", "a\x00b", "a\nb", "a\x1bb", strings.Repeat("x", 300)} {
		tok := iss.mint(with(iss.claims(g.URL, "sub-odd-"+string(rune('a'+i)), "mcp:use mcp:write"), func(c map[string]any) { c["preferred_username"] = name }))
		refusedForGood(t, g.URL, tok, "user name "+strings.ToValidUTF8(name, "?"))
	}
	if n := strings.Count(g.logs.String(), `"reason":"user_name"`); n < 8 {
		t.Errorf("%d refusals logged with reason user_name, want at least 8\nlogs:\n%s", n, g.logs)
	}
	if strings.Contains(g.logs.String(), "worker started") {
		t.Error("a worker was started for a refused name")
	}
	tok := iss.mint(with(iss.claims(g.URL, "sub-alice", "mcp:use mcp:write"), func(c map[string]any) { c["preferred_username"] = "alice.smith" }))
	if e := envOf(t, g.URL, tok); e.User != "alice.smith" || len(e.Args) != 2 || e.Args[1] != "alice.smith" {
		t.Errorf("a good name: %+v", e)
	}
}

// TestAttackIdentityFewerScopesOwnWorker: a client of the same user whose token grants fewer
// scopes, or names other audiences, never runs in the worker another token started: with
// worker_credential passthrough, each finds its own token in its worker and its own scope
// set in GEMGATE_SCOPES.
func TestAttackIdentityFewerScopesOwnWorker(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	g := startServe(t, "--issuer", iss.URL(), "--worker", "command", "--worker-command", buildTestdata(t, "credworker"),
		"--worker-credential", "passthrough")
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	wide := iss.mint(iss.claims(g.URL, "alice", "mcp:use mcp:write files:admin"))
	narrow := iss.mint(iss.claims(g.URL, "alice", "mcp:use mcp:write"))
	otherAud := iss.mint(with(iss.claims(g.URL, "alice", "mcp:use mcp:write"), func(c map[string]any) { c["aud"] = []string{g.URL, "urn:other-backend"} }))
	for _, tc := range []struct {
		name, token, scopes string
	}{
		{"the wide token", wide, "files:admin mcp:use mcp:write"},
		{"a token with fewer scopes", narrow, "mcp:use mcp:write"},
		{"a token for another audience too", otherAud, "mcp:use mcp:write"},
		{"the wide token again", wide, "files:admin mcp:use mcp:write"},
	} {
		e := envOf(t, g.URL, tc.token)
		if e.CredentialSH != sum(tc.token) {
			t.Errorf("%s runs in a worker holding another token", tc.name)
		}
		if e.Scopes != tc.scopes {
			t.Errorf("%s: worker told GEMGATE_SCOPES=%q, want %q", tc.name, e.Scopes, tc.scopes)
		}
	}
}

// TestAttackIdentityUserNamesBound: the bindings of names to subjects are bounded; at the
// bound a new name is refused (503 without Retry-After, logged at error level) and no bound
// name is forgotten, so a flood of new names cannot free a name for another subject.
func TestAttackIdentityUserNamesBound(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	g := startServe(t, "--issuer", iss.URL(), "--user-claim", "preferred_username", "--max-user-names", "2",
		"--worker", "command", "--worker-command", buildTestdata(t, "credworker"))
	token := func(sub, name string) string {
		return iss.mint(with(iss.claims(g.URL, sub, "mcp:use mcp:write"), func(c map[string]any) { c["preferred_username"] = name }))
	}
	if e := envOf(t, g.URL, token("sub-alice", "alice")); e.User != "alice" {
		t.Fatalf("alice: %+v", e)
	}
	if e := envOf(t, g.URL, token("sub-bob", "bob")); e.User != "bob" {
		t.Fatalf("bob: %+v", e)
	}
	for _, sub := range []string{"sub-carol", "sub-dave"} {
		code, h := identityInit(t, g.URL, token(sub, sub))
		if code != http.StatusServiceUnavailable || h.Get("Retry-After") != "" {
			t.Fatalf("a new name at the bound: %d, Retry-After %q; want 503 and none", code, h.Get("Retry-After"))
		}
	}
	refusedForGood(t, g.URL, token("sub-mallory", "alice"), "another subject named alice at the bound")
	if e := envOf(t, g.URL, token("sub-alice", "alice")); e.User != "alice" {
		t.Errorf("alice at the bound: %+v", e)
	}
	if !strings.Contains(g.logs.String(), `"level":"ERROR"`) || !strings.Contains(g.logs.String(), "max_user_names") {
		t.Errorf("the bound was not logged at error level\nlogs:\n%s", g.logs)
	}
}

// grantRefused checks an answer to a token that grants less than the worker serving its
// request: 403 insufficient_scope whose challenge names the worker's scopes (files:admin),
// and a message saying what to do, with nothing of the worker's in it.
func grantRefused(t *testing.T, what string, status int, h http.Header, answer string) {
	t.Helper()
	if status != http.StatusForbidden {
		t.Fatalf("%s: %d %s, want 403", what, status, answer)
	}
	c := parseChallenge(t, h.Get("WWW-Authenticate"))
	if c["error"] != "insufficient_scope" || !strings.Contains(c["scope"], "files:admin") || !strings.Contains(c["scope"], "mcp:use") {
		t.Errorf("%s: challenge %v, want insufficient_scope naming files:admin and mcp:use", what, c)
	}
	if !strings.Contains(answer, "retry with a token granting the scopes files:admin mcp:use mcp:write") ||
		!strings.Contains(answer, "open a new session") || strings.Contains(answer, "credential_sha256") {
		t.Errorf("%s: answer %s", what, answer)
	}
}

// TestAttackIdentityNarrowerTokenInSession: a legacy session stays with the worker of the
// token that opened it. With worker_credential passthrough that worker holds the opening
// token; a later token of the same user on that session that grants fewer scopes, or fewer
// audiences, would run in it. It is refused 403 insufficient_scope naming the worker's
// scopes, with a warning in the log (never the token), and so are its stream and DELETE;
// a token granting more is served by that worker, and a new session of the narrower token
// gets a worker of its own.
func TestAttackIdentityNarrowerTokenInSession(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	g := startServe(t, "--issuer", iss.URL(), "--worker", "command", "--worker-command", buildTestdata(t, "credworker"),
		"--worker-credential", "passthrough")
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	aud := func(extra ...string) func(map[string]any) {
		return func(c map[string]any) { c["aud"] = append([]string{g.URL}, extra...) }
	}
	wide := iss.mint(with(iss.claims(g.URL, "alice", "mcp:use mcp:write files:admin"), aud("urn:backend")))
	fewerScopes := iss.mint(with(iss.claims(g.URL, "alice", "mcp:use mcp:write"), aud("urn:backend")))
	fewerAud := iss.mint(with(iss.claims(g.URL, "alice", "mcp:use mcp:write files:admin"), aud()))
	more := iss.mint(with(iss.claims(g.URL, "alice", "mcp:use mcp:write files:admin files:audit"), aud("urn:backend", "urn:more")))

	s := strictOpen(t, g.URL, wide)
	const env = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"env","arguments":{}}}`
	as := func(token string) *strictRaw {
		return &strictRaw{t: t, url: g.URL, token: token, session: s.session, protocol: s.protocol}
	}
	for _, tc := range []struct{ name, token string }{{"fewer scopes", fewerScopes}, {"fewer audiences", fewerAud}} {
		status, h, answer := as(tc.token).send(env)
		grantRefused(t, tc.name+": tools/call", status, h, answer)
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			req, _ := http.NewRequestWithContext(ctx, method, g.URL, nil)
			req.Header.Set("Authorization", "Bearer "+tc.token)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Mcp-Session-Id", s.session)
			req.Header.Set("Mcp-Protocol-Version", s.protocol)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			cancel()
			grantRefused(t, tc.name+": "+method, resp.StatusCode, resp.Header, string(b))
		}
	}
	pollUntil(t, 10*time.Second, "the refusals' warnings", func() bool {
		return strings.Count(g.logs.String(), "grants less than the worker serving it") >= 6
	})
	for _, tok := range []string{wide, fewerScopes, fewerAud, more} {
		if strings.Contains(g.logs.String(), tok) {
			t.Fatal("the log carries a token")
		}
	}

	// The session is still there, its worker holding the opening token; a token granting
	// more is served by it.
	for _, tc := range []struct{ name, token string }{{"the opening token", wide}, {"a token granting more", more}} {
		status, _, answer := as(tc.token).send(env)
		var out struct {
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		var e credEnv
		if status != http.StatusOK || json.Unmarshal([]byte(answer), &out) != nil || len(out.Result.Content) != 1 ||
			json.Unmarshal([]byte(out.Result.Content[0].Text), &e) != nil {
			t.Fatalf("%s: %d %s", tc.name, status, answer)
		}
		if e.CredentialSH != sum(wide) || e.Scopes != "files:admin mcp:use mcp:write" {
			t.Errorf("%s: the session's worker holds %+v, want the opening token's", tc.name, e)
		}
	}
	// A session of its own gets the narrower token a worker of its own grant.
	if e := envOf(t, g.URL, fewerScopes); e.CredentialSH != sum(fewerScopes) || e.Scopes != "mcp:use mcp:write" {
		t.Errorf("a new session of the narrower token: %+v", e)
	}
}

// TestAttackIdentityNarrowerTokenResumesParkedCall: a 2026-07-28 call bridged to a legacy
// worker program and parked for the client's input stays at the worker of the token that
// made it. A retry with a token of the same user and access mode but fewer scopes is refused
// as in a legacy session (the same text), its answer never reaches the worker, and the call
// stays parked: the retry with the original token completes it.
func TestAttackIdentityNarrowerTokenResumesParkedCall(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "legacy-everything-server")
	if out, err := exec.Command("go", "build", "-C", "conformance/legacyserver", "-o", bin, confEverythingPkg).CombinedOutput(); err != nil {
		t.Fatalf("building the legacy everything-server: %v\n%s", err, out)
	}
	iss := newTestIssuer(t)
	g := startServe(t, "--issuer", iss.URL(), "--worker", "command", "--worker-command", bin, "--worker-start-rate", "0",
		"--read-only-tools", "test_elicitation")
	wide := iss.mint(iss.claims(g.URL, "alice", "mcp:use mcp:write files:admin"))
	narrow := iss.mint(iss.claims(g.URL, "alice", "mcp:use mcp:write"))
	const tool = "test_elicitation"
	args := map[string]any{"message": "Your name?"}
	post := func(token, id string, extra map[string]any) (int, http.Header, string) {
		params := map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		}}
		for k, v := range extra {
			params[k] = v
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "tools/call", "params": params})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.URL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", tool)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	status, _, answer := post(wide, "2", nil)
	var out struct {
		Result struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(answer), &out); err != nil || out.Result.ResultType != "input_required" || len(out.Result.InputRequests) != 1 {
		t.Fatalf("%s: %d %s", tool, status, answer)
	}
	responses := map[string]any{}
	for k := range out.Result.InputRequests {
		responses[k] = map[string]any{"action": "accept", "content": map[string]any{"username": "mallory"}}
	}
	status, h, answer := post(narrow, "3", map[string]any{"inputResponses": responses, "requestState": out.Result.RequestState})
	grantRefused(t, "the narrower token's retry", status, h, answer)
	pollUntil(t, 10*time.Second, "the refusal's warning", func() bool {
		return strings.Contains(g.logs.String(), "grants less than the worker serving it")
	})
	for k := range responses {
		responses[k] = map[string]any{"action": "accept", "content": map[string]any{"username": "ann"}}
	}
	status, _, answer = post(wide, "4", map[string]any{"inputResponses": responses, "requestState": out.Result.RequestState})
	if status != http.StatusOK || !strings.Contains(answer, "action=accept") || !strings.Contains(answer, "ann") || strings.Contains(answer, "mallory") {
		t.Errorf("the opening token's retry: %d %s", status, answer)
	}
}

// TestAttackIdentityWorkerIsNotToldAWriteScopeItLacks: a token whose one scope holds a white
// space other than the separator (a tab in `scope`, a space inside an element of `scp`) is
// read-only to gemgate, which splits `scope` at SP alone and takes each `scp` element whole.
// Its worker is told GEMGATE_READ_ONLY=1 and must not be told, in GEMGATE_SCOPES, a scope
// list in which a worker splitting at white space (Python's str.split(), Go's strings.Fields,
// or at SP alone) finds the write scope.
func TestAttackIdentityWorkerIsNotToldAWriteScopeItLacks(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	g := startServe(t, "--issuer", iss.URL(), "--worker", "command", "--worker-command", buildTestdata(t, "credworker"),
		"--read-only-tools", "env")
	for _, tc := range []struct {
		name string
		set  func(c map[string]any)
	}{
		{"a tab in scope", func(c map[string]any) { c["scope"] = "mcp:use tenant:x\tmcp:write" }},
		{"a no-break space in scope", func(c map[string]any) { c["scope"] = "mcp:use tenant:x\u00a0mcp:write" }},
		{"a space in an scp element", func(c map[string]any) { delete(c, "scope"); c["scp"] = []string{"mcp:use", "tenant:x mcp:write"} }},
	} {
		e := envOf(t, g.URL, iss.mint(with(iss.claims(g.URL, "alice", ""), tc.set)))
		if e.ReadOnly != "1" {
			t.Fatalf("%s: GEMGATE_READ_ONLY=%q; the token has no write scope", tc.name, e.ReadOnly)
		}
		if slices.Contains(strings.Fields(e.Scopes), "mcp:write") || slices.Contains(strings.Split(e.Scopes, " "), "mcp:write") {
			t.Errorf("%s: a read-only worker is told GEMGATE_SCOPES=%q, which names mcp:write to a worker that splits it", tc.name, e.Scopes)
		}
	}
}

// TestAttackIdentitySubjectNoWorkerCanBeToldOf: the subject goes into every worker's
// environment (GEMGATE_SUBJECT), where a NUL cannot be: a token whose sub holds one must be
// refused for good at authentication (401, invalid_token), as a user name no worker can act
// as is, not admitted to a start that fails every time and is retried for ever (503 with
// Retry-After).
func TestAttackIdentitySubjectNoWorkerCanBeToldOf(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	g := startServe(t, "--issuer", iss.URL(), "--user-claim", "preferred_username",
		"--worker", "command", "--worker-command", buildTestdata(t, "credworker"))
	tok := iss.mint(with(iss.claims(g.URL, "sub\x00odd", "mcp:use mcp:write"), func(c map[string]any) { c["preferred_username"] = "bob" }))
	code, h := identityInit(t, g.URL, tok)
	if code != http.StatusUnauthorized || h.Get("Retry-After") != "" {
		t.Errorf("a sub holding a NUL: status %d, Retry-After %q; want 401 and none (503 is a start that fails at every retry)",
			code, h.Get("Retry-After"))
	}
}
