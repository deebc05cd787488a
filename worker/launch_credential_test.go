package worker

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

// How the launcher hands the credential over: on the descriptor by default, on the first
// stdin line with CredentialStdin (which wins over CredentialEnv), in the environment only
// with CredentialEnv alone.
func TestLaunchHandsTheCredentialOver(t *testing.T) {
	const tok = "tok-3c9d"
	id := Identity{Subject: "s", User: "alice", Token: tok}
	for _, tc := range []struct {
		name             string
		env, stdin       bool
		wantEnv, wantIn  bool
		wantOnDescriptor bool
	}{
		{"descriptor", false, false, false, false, true},
		{"stdin", false, true, false, true, false},
		{"stdin over env", true, true, false, true, false},
		{"env", true, false, true, false, false},
	} {
		l := &CommandLauncher{Command: []string{"/bin/true"}, Credential: PassthroughCredential{}, CredentialEnv: tc.env, CredentialStdin: tc.stdin}
		la, err := l.Launch(context.Background(), id)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		inEnv := slices.ContainsFunc(la.Env, func(kv string) bool { return strings.Contains(kv, tok) })
		handed := string(la.Credential) == tok
		if inEnv != tc.wantEnv || la.CredentialStdin != tc.wantIn || handed != (tc.wantIn || tc.wantOnDescriptor) {
			t.Errorf("%s: in the environment %v, CredentialStdin %v, Spec.Credential set %v", tc.name, inEnv, la.CredentialStdin, handed)
		}
	}
}

// A credential never prints its token: not with %v, %+v, %#v, nor in a log line.
func TestCredentialIsRedacted(t *testing.T) {
	c := Credential{Token: "s3cret-token", Expiry: time.Unix(1, 0)}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "cred", c)
	for _, out := range []string{fmt.Sprintf("%v %+v %#v %s", c, c, c, c), buf.String()} {
		if strings.Contains(out, "s3cret") {
			t.Errorf("token leaked: %s", out)
		}
	}
}
