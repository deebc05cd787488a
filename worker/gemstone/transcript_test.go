package gemstone

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// transcript is one whole run of the relay under the fake topaz, fed input and read to the
// end: for what a worker.Process hides (string ids, what topaz prints after the last answer,
// its exit status).
type transcript struct {
	lines []string // stdout, line by line
	code  int      // topaz's exit status
}

func runTranscript(t *testing.T, s stone, user, tok string, input ...string) transcript {
	t.Helper()
	r, err := Prepare(context.Background(), s.config(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := r.Command()[1:]
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "{user}", user)
	}
	cmd := exec.CommandContext(ctx, r.Topaz, args...)
	cmd.Env = append(append(os.Environ(), relayEnv(t, r)...), "GEMGATE_USER="+user, "GEMGATE_READ_ONLY=0")
	// The token first, as the gateway writes it (worker.Spec.CredentialStdin).
	cmd.Stdin = strings.NewReader(tok + "\n" + strings.Join(input, "\n") + "\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("topaz: %v\n%s", err, errOut.String())
	}
	return transcript{lines: strings.Split(strings.TrimRight(out.String(), "\n"), "\n"), code: code}
}

// after is what topaz printed after the ready greeting.
func (tr transcript) after(t *testing.T) []string {
	t.Helper()
	for i, l := range tr.lines {
		if strings.HasPrefix(l, `{"gemgate":"ready"`) {
			return tr.lines[i+1:]
		}
	}
	t.Fatalf("no ready greeting in %q", tr.lines)
	return nil
}
