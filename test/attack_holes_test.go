package test

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// Holes found in the security release's fixes, replayed against the real binary: one subject
// that renames itself again and again, and worker_user accounts a token's user name cannot
// have. (The percent-encoded credential is replayed in worker/attack_hostile_test.go with a
// real worker process: the credentials gemgate hands over in these tests are JWTs, which no
// percent-encoding changes.)

// TestAttackHolesOneSubjectCannotFillTheBoundNames: with user_claim preferred_username, one
// subject whose name changes at every token binds 8 names; the 9th and later are refused like
// a taken name (403 invalid_token, no Retry-After, a warning with the subject and the reason
// user_names_per_subject, never the token), and a new user is still served although the
// subject tried more names than max_user_names leaves room for.
func TestAttackHolesOneSubjectCannotFillTheBoundNames(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	g := startServe(t, "--issuer", iss.URL(), "--user-claim", "preferred_username", "--max-user-names", "10",
		"--worker", "command", "--worker-command", buildTestdata(t, "credworker"))
	token := func(sub, name string) string {
		return iss.mint(with(iss.claims(g.URL, sub, "mcp:use mcp:write"), func(c map[string]any) { c["preferred_username"] = name }))
	}
	var tokens []string
	for i := range 12 {
		tok := token("sub-renamer", "renamed-"+strconv.Itoa(i))
		tokens = append(tokens, tok)
		if i < 8 {
			if code, _ := identityInit(t, g.URL, tok); code != 200 {
				t.Fatalf("name %d of the subject: status %d", i, code)
			}
			continue
		}
		refusedForGood(t, g.URL, tok, "name "+strconv.Itoa(i)+" of one subject")
	}
	if e := envOf(t, g.URL, token("sub-carol", "carol")); e.User != "carol" || e.Subject != "sub-carol" {
		t.Errorf("a new user after one subject tried 12 names with max_user_names 10: %+v", e)
	}
	pollUntil(t, 10*time.Second, "the warning naming the subject", func() bool {
		for _, line := range strings.Split(g.logs.String(), "\n") {
			if strings.Contains(line, `"reason":"user_names_per_subject"`) && strings.Contains(line, `"level":"WARN"`) && strings.Contains(line, "sub-renamer") {
				return true
			}
		}
		return false
	})
	for _, tok := range tokens {
		if strings.Contains(g.logs.String(), tok[strings.LastIndexByte(tok, '.')+1:]) {
			t.Fatal("the log carries a token")
		}
	}
}

// TestAttackHolesWorkerAccountRefusedAtAuthentication: with worker_user "{user}" (one system
// account per user; gemgate runs as root), a token whose user has no account, names a
// system account, or makes a name no account can have (':') is refused at authentication,
// 403 without Retry-After, every time, with the reason user_name in the log; no worker start
// is tried, so it never meets the 503 with Retry-After its client would retry for ever.
func TestAttackHolesWorkerAccountRefusedAtAuthentication(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	g := startServe(t, "--issuer", iss.URL(), "--user-claim", "preferred_username",
		"--worker", "command", "--worker-command", buildTestdata(t, "credworker"), "--worker-user", "{user}")
	names := []string{"gemgate-no-such-account", "daemon", "nobody", "svc:alice"}
	for i, name := range names {
		tok := iss.mint(with(iss.claims(g.URL, "sub-acct-"+strconv.Itoa(i), "mcp:use mcp:write"), func(c map[string]any) { c["preferred_username"] = name }))
		refusedForGood(t, g.URL, tok, "user name "+name)
	}
	pollUntil(t, 10*time.Second, "a user_name refusal logged for each name", func() bool {
		return strings.Count(g.logs.String(), `"reason":"user_name"`) >= len(names)
	})
	for _, want := range []string{"does not exist", "a system account", "no system account can have"} {
		if !strings.Contains(g.logs.String(), want) {
			t.Errorf("no refusal says %q\nlogs:\n%s", want, g.logs)
		}
	}
	if strings.Contains(g.logs.String(), "worker started") {
		t.Error("a worker was started for a refused name")
	}
}
