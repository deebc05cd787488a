package worker

import (
	"context"
	"strings"
	"testing"
)

// "{user}" in worker_command is the user claim, which the user or their IdP often chooses
// (preferred_username). A name that an option parser or a path would read as more than a
// name is refused: a leading "-", a "/", "." or "..", which would walk out of a path the
// template builds (--data=/srv/mcp/{user}) into another user's directory, or anywhere.
func TestUserNameCannotTraverseInCommand(t *testing.T) {
	l := &CommandLauncher{Command: []string{"/bin/true", "--data=/srv/mcp/{user}"}}
	for _, user := range []string{"../bob", "alice/../../../etc", "..", ".", "-rf", "a\x00b"} {
		la, err := l.Launch(context.Background(), Identity{Subject: "s", User: user})
		if err == nil {
			t.Errorf("user %q: worker started with argument %q", user, la.Args[0])
		}
	}
	la, err := l.Launch(context.Background(), Identity{Subject: "s", User: "alice.smith"})
	if err != nil || la.Args[0] != "--data=/srv/mcp/alice.smith" {
		t.Errorf("user alice.smith: %v %q", err, la.Args)
	}
}

// The worker is told the scope set, sorted, without repeats.
func TestWorkerToldItsScopeSet(t *testing.T) {
	l := &CommandLauncher{Command: []string{"/bin/true"}}
	la, err := l.Launch(context.Background(), Identity{Subject: "s", User: "alice", Scopes: []string{"mcp:write", "mcp:use", "mcp:write"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range la.Env {
		if v, ok := strings.CutPrefix(kv, "GEMGATE_SCOPES="); ok && v != "mcp:use mcp:write" {
			t.Errorf("GEMGATE_SCOPES=%q, want %q", v, "mcp:use mcp:write")
		}
	}
}

func TestCheckUser(t *testing.T) {
	plain := &CommandLauncher{Command: []string{"/bin/true", "--stdio"}}
	inArgs := &CommandLauncher{Command: []string{"/bin/true", "--data=/srv/mcp/{user}"}}
	inAccount := &CommandLauncher{Command: []string{"/bin/true"}, WorkerUser: "mcp-{user}"}
	for _, tc := range []struct {
		user          string
		plain, inArgs bool // accepted
	}{
		{"alice", true, true},
		{"alice.smith@example.com", true, true},
		{"Zoë", true, true},
		{"auth0|123/abc", true, false},
		{"-rf", true, false},
		{"..", true, false},
		{".", true, false},
		{"a/b", true, false},
		{"a..b", true, true},
		{"", false, false},
		{"a\x00b", false, false},
		{"a\nb", false, false},
		{"a\x1b[31mb", false, false},
		{"a\u0085b", false, false},
		{"a\u2028b", false, false},
		{"\xff", false, false},
		{strings.Repeat("a", MaxUserNameBytes), true, true},
		{strings.Repeat("a", MaxUserNameBytes+1), false, false},
	} {
		if got := plain.CheckUser(tc.user) == nil; got != tc.plain {
			t.Errorf("%q without {user}: accepted %t, want %t", tc.user, got, tc.plain)
		}
		if got := inArgs.CheckUser(tc.user) == nil; got != tc.inArgs {
			t.Errorf("%q with {user} in worker_command: accepted %t, want %t", tc.user, got, tc.inArgs)
		}
		// With {user} in worker_user, the account must exist as well: mcp-<name> exists for
		// none of these, so a name the rules accept is refused as an account the system lacks.
		err := inAccount.CheckUser(tc.user)
		if err == nil || (tc.inArgs && !strings.Contains(err.Error(), "does not exist")) {
			t.Errorf("%q with {user} in worker_user (no such account): %v, want refused as no account (%t) or by the rules (%t)", tc.user, err, tc.inArgs, !tc.inArgs)
		}
	}
}
