package gemstone

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/worker"
)

type fixedCredential string

func (c fixedCredential) Credential(context.Context, worker.Identity) (worker.Credential, error) {
	return worker.Credential{Token: string(c), Expiry: time.Now().Add(time.Hour)}, nil
}

// TestRelayCredentialIsInNoProcessEnvironment starts the relay as cmd/gemgate does
// (CredentialStdin, the GemStone sandbox when bubblewrap works here), with
// worker_credential_env on as well, and then reads /proc/*/environ and cmdline as any other
// process of the same account could: a user's gem forked by a NetLDI running under gemgate's
// account, say, in which that user runs execute_code. Another user's token must be in none of
// them while the relay serves.
func TestRelayCredentialIsInNoProcessEnvironment(t *testing.T) {
	s := newStone(t, nil)
	r, err := Prepare(context.Background(), s.config(t))
	if err != nil {
		t.Fatal(err)
	}
	tok := token(goodClaims("alice"))
	l := &worker.CommandLauncher{Command: r.Command(), Env: relayEnv(t, r), CredentialStdin: true, CredentialEnv: true,
		Credential: fixedCredential(tok), StopGrace: 200 * time.Millisecond}
	if bwrap, err := worker.ProbeSandbox(context.Background(), nil); err == nil {
		l.Sandbox = &worker.Sandbox{Bwrap: bwrap, Readable: []string{r.Home}, Writable: []string{r.GlobalDir.Dir}}
		t.Logf("sandboxed with %s", bwrap)
	} else {
		t.Logf("no sandbox here: %v", err)
	}
	la, err := l.Launch(context.Background(), worker.Identity{User: "alice", Token: "client-token"})
	if err != nil {
		t.Fatal(err)
	}
	Apply(&la.Spec)
	p, err := worker.Start(la.Spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	c, err := p.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`1`), Method: "ping", Params: json.RawMessage(`{}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-c.Result():
		if m.Error != nil {
			t.Fatalf("relay not ready: %s", m.Error)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no answer")
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		for _, f := range []string{"environ", "cmdline"} {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), f))
			if err == nil && bytes.Contains(b, []byte(tok)) {
				comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
				t.Errorf("the user's GemStone token is readable in /proc/%d/%s (%s) by any process of the account", pid, f, bytes.TrimSpace(comm))
			}
		}
	}
}

// The relay takes its token from the first line of stdin and from nowhere else: a token in the
// environment is ignored, so a gateway that sends it there fails to log the user in.
func TestRelayTakesTheCredentialOnlyFromStdin(t *testing.T) {
	s := newStone(t, nil)
	r, err := Prepare(context.Background(), s.config(t))
	if err != nil {
		t.Fatal(err)
	}
	tok := token(goodClaims("alice"))
	env := append(append(os.Environ(), relayEnv(t, r)...), "GEMGATE_USER=alice", "GEMGATE_READ_ONLY=0", "GEMGATE_CREDENTIAL="+tok)
	spec := worker.Spec{Path: r.Topaz, Args: r.Command()[1:], Env: env, StopGrace: 200 * time.Millisecond}
	for i, a := range spec.Args {
		spec.Args[i] = strings.ReplaceAll(a, "{user}", "alice")
	}
	Apply(&spec)
	p, err := worker.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	if msg := refusalText(t, p); !strings.Contains(msg, "Invalid JWT") {
		t.Errorf("a token in GEMGATE_CREDENTIAL, none on stdin: initialize gave %q, want the request refused as a token", msg)
	}
	if tr := runTranscript(t, s, "alice", ""); !strings.Contains(strings.Join(tr.lines, "\n"), "no credential on the first line of stdin") {
		t.Errorf("an empty first line: topaz printed %q", tr.lines)
	}
}
