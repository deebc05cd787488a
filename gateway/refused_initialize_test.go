package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/worker"
)

// refusalCredential is the backend credential gemgate hands the workers of these tests (as
// worker_credential: exchange hands each worker a token for its backend).
const refusalCredential = "exchanged-backend-credential.c2VjcmV0LXNpZ25hdHVyZQ"

type refusalCred struct{}

func (refusalCred) Credential(context.Context, worker.Identity) (worker.Credential, error) {
	return worker.Credential{Token: refusalCredential}, nil
}

// shellLauncher starts /bin/sh -c script as the worker, with the credential on its
// descriptor 3, through the real CommandLauncher.
type shellLauncher struct{ script string }

func (l shellLauncher) Launch(ctx context.Context, id worker.Identity) (worker.Launch, error) {
	cl := &worker.CommandLauncher{Command: []string{"/bin/sh", "-c", l.script}, Credential: refusalCred{}, StopGrace: 200 * time.Millisecond}
	return cl.Launch(ctx, id)
}

// A worker whose backend login fails answers initialize with a JSON-RPC error, and the
// message of such an error may quote what the login was given. gemgate logs that answer
// ("worker refused initialize"), traces it and sends it to the client: in all three the
// credential is [redacted], as it is in a greeting's refusal
// (TestRefusalQuotingTheCredentialIsRedacted) and in every worker line gemgate logs; the
// exchanged credential is the worker's, never the client's (DESIGN §9.7).
func TestRefusedInitializeQuotingTheCredentialIsRedacted(t *testing.T) {
	script := `c=$(cat <&3); read -r req; id=$(printf '%s' "$req" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p'); ` +
		`printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"backend login refused for %s"}}\n' "$id" "$c"; exec sleep 30`
	f := newFixture(t, func(o *Options) { o.Workers = shellLauncher{script: script} })
	r := f.client("alice-rw").rpc("1", "initialize", initParams("2025-06-18"))
	if !strings.Contains(string(r.body), "backend login refused") {
		t.Fatalf("initialize: status %d, body %s: want the worker's refusal", r.status, r.body)
	}
	var leaks []string
	if strings.Contains(string(r.body), refusalCredential) {
		leaks = append(leaks, "the client's answer: "+string(r.body))
	}
	for _, l := range strings.Split(f.log.String(), "\n") {
		if strings.Contains(l, refusalCredential) {
			leaks = append(leaks, "the log: "+l)
		}
	}
	if len(leaks) > 0 {
		t.Fatalf("the worker's credential, quoted in its refusal of initialize, reaches\n%s", strings.Join(leaks, "\n"))
	}
}

// The same refusal is logged clipped ("worker refused initialize", at warn), like every other
// text of a worker's that gemgate logs (a stderr line to 512 bytes, a greeting's refusal): a
// worker's error answer may be as long as a line may be, 16 MiB.
func TestRefusedInitializeIsClippedInLog(t *testing.T) {
	script := `read -r req; id=$(printf '%s' "$req" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p'); ` +
		`pad=$(head -c 200000 /dev/zero | tr '\0' x); ` +
		`printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"refused %s"}}\n' "$id" "$pad"; exec sleep 30`
	f := newFixture(t, func(o *Options) {
		o.Workers = shellLauncher{script: script}
		o.Trace = nil
	})
	r := f.client("alice-rw").rpc("1", "initialize", initParams("2025-06-18"))
	if !strings.Contains(string(r.body), "refused xxx") {
		t.Fatalf("initialize: status %d, body %.200s: want the worker's refusal", r.status, r.body)
	}
	const bound = 8 << 10
	for _, l := range strings.Split(f.log.String(), "\n") {
		if len(l) > bound {
			t.Fatalf("a log line of %d bytes (bound %d) from a worker's refusal of initialize:\n%.200s...", len(l), bound, l)
		}
	}
}
