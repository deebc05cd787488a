package pool

import (
	"context"
	"testing"

	"github.com/gemgate/gemgate/auth"
)

// "{user}" in worker_command is the user claim, which the user or their IdP often chooses
// (preferred_username). A name that an option parser or a path would read as more than a
// name is refused: a leading "-", a "/", "." or "..", which would walk out of a path the
// template builds (--data=/srv/mcp/{user}) into another user's directory, or anywhere.
func TestUserNameCannotTraverseInCommand(t *testing.T) {
	l := &CommandLauncher{Command: []string{"/bin/true", "--data=/srv/mcp/{user}"}}
	for _, user := range []string{"../bob", "alice/../../../etc", "..", ".", "-rf", "a\x00b"} {
		la, err := l.Launch(context.Background(), Identity{Principal: auth.Principal{Subject: "s", User: user}})
		if err == nil {
			t.Errorf("user %q: worker started with argument %q", user, la.Args[0])
		}
	}
	la, err := l.Launch(context.Background(), Identity{Principal: auth.Principal{Subject: "s", User: "alice.smith"}})
	if err != nil || la.Args[0] != "--data=/srv/mcp/alice.smith" {
		t.Errorf("user alice.smith: %v %q", err, la.Args)
	}
}
