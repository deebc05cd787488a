package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth/devissuer"
)

// max_user_names bounds the user names gemgate binds to their subject; 0 would refuse every
// new user, so it is refused at start.
func TestMaxUserNamesMustBePositive(t *testing.T) {
	for _, tc := range []struct {
		value string
		ok    bool
	}{{"0", false}, {"-1", false}, {"1", true}, {"100000", true}} {
		c, err := load("serve", []string{"--issuer", "https://id.example", "--max-user-names", tc.value})
		if err != nil {
			t.Fatal(err)
		}
		refused := strings.Contains(configErrors(c.validate()).Error(), "max_user_names")
		if refused == tc.ok {
			t.Errorf("max_user_names %s: refused %t, want %t", tc.value, refused, !tc.ok)
		}
	}
	c, _ := load("serve", nil)
	if c.MaxUserNames != 100000 {
		t.Errorf("default max_user_names %d, want 100000", c.MaxUserNames)
	}
}

// gemgate check --token judges a user name as serve's authentication does: a name no worker
// can act as is a refusal (403 invalid_token), not "would accept".
func TestCheckTokenJudgesTheUserName(t *testing.T) {
	const resource = "http://127.0.0.1:8080/mcp"
	iss, err := devissuer.Start(devissuer.Options{Audience: resource})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { iss.Close() })
	tok, err := iss.Mint("-rf", []string{"mcp:use", "mcp:write"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--issuer", iss.URL(), "--listen", "127.0.0.1:8080", "--user-claim", "preferred_username", "--token", tok}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"{user} in worker_command", []string{"--worker", "command", "--worker-command", "/bin/true --user {user}"}, 1,
			"Verdict: gemgate would refuse this token (403 invalid_token: token claim preferred_username: the user name begins with '-'"},
		{"{user} in worker_user", []string{"--worker", "demo", "--worker-user", "mcp-{user}"}, 1, "403 invalid_token"},
		{"no {user}", []string{"--worker", "demo"}, 0, `would accept this token: user "-rf"`},
	} {
		var out, errOut bytes.Buffer
		code := checkCommand(context.Background(), append(append([]string{}, base...), tc.args...), &out, &errOut)
		if code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s: exit %d, want %d with %q\n%s%s", tc.name, code, tc.code, tc.want, out.String(), errOut.String())
		}
	}
}
