//go:build linux

package worker

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A worker's stdout line that is not JSON-RPC is logged redacted, and so must be the reason
// it is not: a key that appears twice in the envelope is quoted by the parser's refusal
// (jsonrpc.KeyError), and a worker that quotes its credential as a key (a login message
// written as an object keyed by what it logged in with) must not get it into gemgate's log
// through the "error" attribute beside the redacted "line".
func TestCredentialQuotedAsARepeatedKeyIsRedacted(t *testing.T) {
	const cred = "opaque-backend-credential-5e1f0a9c"
	for name, line := range map[string]string{
		"repeated": `{"jsonrpc":"2.0","` + cred + `":1,"` + cred + `":2}`,
		"escaped":  `{"jsonrpc":"2.0","\u006fpaque-backend-credential-5e1f0a9c":1,"` + cred + `":2}`,
		"cased":    `{"jsonrpc":"2.0","` + strings.ToUpper(cred) + `":1,"` + cred + `":2}`,
	} {
		t.Run(name, func(t *testing.T) {
			var logs logBuffer
			spec := Spec{Path: "/bin/sh", Args: []string{"-c", `cat <&3 >/dev/null; printf '%s\n' '` + line + `'; exec cat >/dev/null`},
				StopGrace: 200 * time.Millisecond, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
				Credential: []byte(cred)}
			p, err := Start(spec)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Stop)
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(logs.String(), "not JSON-RPC") && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			out := logs.String()
			if !strings.Contains(out, "not JSON-RPC") {
				t.Fatalf("the worker's line was not logged:\n%s", out)
			}
			if strings.Contains(out, cred) {
				t.Errorf("the worker's credential is in gemgate's log:\n%s", out)
			}
		})
	}
}
