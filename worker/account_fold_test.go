//go:build linux

package worker

import (
	"errors"
	"os/user"
	"strconv"
	"strings"
	"testing"
)

// foldingDirectory stands for an account database whose lookups fold case (LDAP's uid is
// matched caseIgnore, SSSD with case_sensitive = false, winbind): every spelling of a name
// finds the one account, under its own name.
func foldingDirectory(t *testing.T, accounts ...string) {
	t.Helper()
	old := lookupUser
	t.Cleanup(func() { lookupUser = old; accountChecks = accountCache{} })
	accountChecks = accountCache{}
	lookupUser = func(name string) (*user.User, error) {
		for i, a := range accounts {
			if strings.EqualFold(a, name) {
				uid := strconv.Itoa(1500 + i)
				return &user.User{Username: a, Uid: uid, Gid: uid, HomeDir: "/home/" + a}, nil
			}
		}
		return nil, user.UnknownUserError(name)
	}
}

// Two gemgate users whose names differ only in case ("Alice" of one subject, "alice" of
// another: gemgate keys workers on the exact name) must not share an account through a
// lookup that folds case: one account per user is what keeps each user's worker out of the
// other's memory, environment and files. A templated name finds only the account of exactly
// that name.
func TestAccountForRefusesAnAccountOfAnotherName(t *testing.T) {
	foldingDirectory(t, "alice", "mcp-bob")
	if a, err := AccountFor("{user}", "alice"); err != nil || a.Name != "alice" {
		t.Fatalf("AccountFor({user}, alice) = %+v, %v; want the account alice", a, err)
	}
	for _, tc := range []struct{ template, user string }{
		{"{user}", "Alice"},
		{"{user}", "ALICE"},
		{"mcp-{user}", "Bob"},
	} {
		if a, err := AccountFor(tc.template, tc.user); err == nil {
			t.Errorf("AccountFor(%q, %q) = account %s (uid %d): another user's account, found by a lookup that folds case", tc.template, tc.user, a.Name, a.Uid)
		}
		l := &CommandLauncher{Command: []string{"worker"}, WorkerUser: tc.template}
		var une *UserNameError
		if err := l.CheckUser(tc.user); !errors.As(err, &une) {
			t.Errorf("CheckUser(%q) with worker_user %q = %v; want a UserNameError (authentication refuses the name, as every start would)", tc.user, tc.template, err)
		}
	}
	l := &CommandLauncher{Command: []string{"worker"}, WorkerUser: "mcp-{user}"}
	if err := l.CheckUser("bob"); err != nil {
		t.Errorf("CheckUser(bob) with worker_user mcp-{user} = %v; want nil", err)
	}
}
