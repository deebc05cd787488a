package test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
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
