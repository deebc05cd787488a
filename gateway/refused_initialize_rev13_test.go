package gateway

import (
	"strings"
	"testing"
)

// Rev13: a worker's refusal of initialize reaches the log redacted and clipped (refusal(),
// "worker refused initialize"), but only when handshake takes it for a refusal. An error
// answer whose data says {"kind":"workerExit"} (the worker's to write: it is the worker's own
// JSON, read with encoding/json, so "Kind" or "KIND" does as well) is taken for gemgate's own
// "worker exited" error instead: StartError{Exited: true, Err: errors.New(string(resp.Error))},
// the answer whole as the error's text, which the gateway logs as the 503's cause ("request
// failed"): the credential the worker quotes, unredacted, and the answer unclipped (up to a
// 16 MiB line). Expected: the credential is [redacted] and the line bounded in every log line.
func TestRev13RefusalDressedAsWorkerExitIsLoggedWhole(t *testing.T) {
	script := `c=$(cat <&3); read -r req; id=$(printf '%s' "$req" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p'); ` +
		`pad=$(head -c 100000 /dev/zero | tr '\0' x); ` +
		`printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"backend login refused for %s %s","data":{"Kind":"workerExit"}}}\n' "$id" "$c" "$pad"; exec sleep 30`
	f := newFixture(t, func(o *Options) {
		o.Workers = shellLauncher{script: script}
		o.Trace = nil // the trace logs bodies whole, by design; the log is what is bounded
	})
	r := f.client("alice-rw").rpc("1", "initialize", initParams("2025-06-18"))
	if strings.Contains(string(r.body), refusalCredential) {
		t.Errorf("the client's answer quotes the worker's credential: %.300s", r.body)
	}
	const bound = 8 << 10
	for _, l := range strings.Split(f.log.String(), "\n") {
		if strings.Contains(l, refusalCredential) || len(l) > bound {
			t.Errorf("a log line of %d bytes (bound %d) holds the worker's credential (%v): %.300s...",
				len(l), bound, strings.Contains(l, refusalCredential), l)
		}
	}
}

// Rev13: the same for a worker's initialize result naming a protocol version gemgate does
// not speak: resultVersion quotes it (clipped to 100 bytes, never redacted) into the
// StartError the gateway logs as the 503's cause. A worker whose result echoes the
// credential it was handed (protocolVersion, say) puts it in gemgate's log.
func TestRev13ResultVersionQuotingTheCredentialIsLogged(t *testing.T) {
	script := `c=$(cat <&3); read -r req; id=$(printf '%s' "$req" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p'); ` +
		`printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"%s","capabilities":{},"serverInfo":{"name":"x","version":"0"}}}\n' "$id" "$c"; exec sleep 30`
	f := newFixture(t, func(o *Options) {
		o.Workers = shellLauncher{script: script}
		o.Trace = nil
	})
	r := f.client("alice-rw").rpc("1", "initialize", initParams("2025-06-18"))
	if strings.Contains(string(r.body), refusalCredential) {
		t.Errorf("the client's answer quotes the worker's credential: %.300s", r.body)
	}
	for _, l := range strings.Split(f.log.String(), "\n") {
		if strings.Contains(l, refusalCredential) {
			t.Errorf("a log line holds the worker's credential: %.400s", l)
		}
	}
}
