//go:build linux

package worker

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuffer is a log destination the worker's goroutines and the test share.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A worker that prints the credential it was handed (a login message quoting its input), on
// stderr, as a stdout line that is not JSON-RPC, in a line the trace records, or in the
// greeting that refuses to serve: gemgate's log, which every user's audit lines share, and
// its trace carry "[redacted]" in its place, whichever way the credential was handed over.
func TestEchoedCredentialIsRedacted(t *testing.T) {
	const cred = "eyJhbGciOiJSUzI1NiJ9.exchanged-backend-credential.c2lnbmF0dXJlLXNlY3JldA"
	read := map[string]string{ // how each hand-over's worker reads the credential
		"descriptor": `c=$(cat <&3)`,
		"stdin":      `read -r c`,
		"env":        `c=$GEMGATE_CREDENTIAL`,
	}
	echo := map[string]string{
		"stderr":        `echo "login with $c" >&2`,
		"stdout":        `echo "login with $c"`,
		"json":          `echo '{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"login with '"$c"'"}}'`,
		"greeting":      `echo "refused: login with $c"`,
		"id never sent": `echo '{"jsonrpc":"2.0","id":"login with '"$c"'","result":{}}'`,
	}
	for how, r := range read {
		for where, e := range echo {
			t.Run(how+"/"+where, func(t *testing.T) {
				var logs, trace logBuffer
				spec := Spec{Path: "/bin/sh", Args: []string{"-c", r + "; " + e + "; exec cat >/dev/null"},
					StopGrace: 200 * time.Millisecond, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
					OnTrace: func(_ string, line []byte) { trace.Write(append(line, '\n')) }}
				switch how {
				case "descriptor":
					spec.Credential = []byte(cred)
				case "stdin":
					spec.Credential, spec.CredentialStdin = []byte(cred), true
				case "env":
					spec.Env, spec.Secrets = []string{"GEMGATE_CREDENTIAL=" + cred}, [][]byte{[]byte(cred)}
				}
				if where == "greeting" {
					spec.Greeting = func(line []byte) (bool, error) {
						if line == nil {
							return false, errors.New("no greeting")
						}
						return false, errors.New(string(line))
					}
				}
				p, err := Start(spec)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(p.Stop)
				// A notification is not logged (it goes on to its session) and stderr is not
				// traced; every other line is both.
				logged, traced := where != "json", where != "stderr"
				deadline := time.Now().Add(10 * time.Second)
				for (logged && !strings.Contains(logs.String(), "login with") || traced && !strings.Contains(trace.String(), "login with")) &&
					time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if logged && !strings.Contains(logs.String(), "login with [redacted]") {
					t.Errorf("the worker's line was not logged, redacted:\n%s", logs.String())
				}
				if traced && !strings.Contains(trace.String(), "login with [redacted]") {
					t.Errorf("the worker's line was not traced, redacted:\n%s", trace.String())
				}
				for name, out := range map[string]string{"log": logs.String(), "trace": trace.String()} {
					if strings.Contains(out, "c2lnbmF0dXJlLXNlY3JldA") {
						t.Errorf("the worker's credential is in gemgate's %s:\n%s", name, out)
					}
				}
			})
		}
	}
}
