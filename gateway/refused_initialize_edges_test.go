package gateway

import (
	"strings"
	"testing"
)

// A worker's error answer to initialize whose data says {"kind":"workerExit"} (the worker's
// to write, in any case of the key) reads as the worker package's own "exited before
// answering", and is logged as a 503's cause: without the credential the worker quotes, and
// clipped, like every other worker text gemgate logs.
func TestRefusalDressedAsWorkerExitIsRedactedAndClipped(t *testing.T) {
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

// A worker's initialize result naming a protocol version gemgate does not speak is quoted
// in the 503's cause that the gateway logs: without the credential the worker was handed.
func TestResultVersionQuotingTheCredentialIsRedacted(t *testing.T) {
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
