package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// echoCredentialWorker answers initialize, then answers every tools/call with the credential
// it was handed on descriptor 3 in its result, as a worker that reports "logged in with ..."
// would.
const echoCredentialWorker = `c=$(cat <&3); while read -r req; do ` +
	`id=$(printf '%s' "$req" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p'); ` +
	`case "$req" in ` +
	`*'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"x","version":"0"}}}\n' "$id";; ` +
	`*'"tools/call"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"logged in with %s"}]}}\n' "$id" "$c";; ` +
	`*) [ -n "$id" ] && printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id";; ` +
	`esac; done`

// A credential the worker echoes in an answer is redacted in every trace line that carries
// the answer: the line that reads it from the worker ("from_worker") and the line of the
// answer on its way to the client ("gateway_to_client"), which the trace once wrote verbatim.
// The client, whose worker it is, gets the answer as the worker wrote it.
func TestTraceRedactsWorkerSecretsInEveryDirection(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Workers = shellLauncher{script: echoCredentialWorker} })
	c := f.client("alice-rw")
	c.open()
	r := c.rpc("2", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{}})
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "logged in with "+refusalCredential) {
		t.Fatalf("tools/call: status %d, body %.300s: want the worker's answer quoting its credential", r.status, r.body)
	}
	directions := map[string]bool{}
	for _, rec := range f.log.records(t) {
		if rec["msg"] != "trace" {
			continue
		}
		body, _ := rec["body"].(string)
		if strings.Contains(body, "logged in with") {
			directions[rec["direction"].(string)] = true
		}
	}
	for _, d := range []string{"from_worker", "gateway_to_client"} {
		if !directions[d] {
			t.Errorf("no %s trace line of the tools/call answer; traced: %v", d, directions)
		}
	}
	for _, l := range strings.Split(f.log.String(), "\n") {
		if strings.Contains(l, refusalCredential) {
			t.Errorf("a log line holds the worker's credential: %.400s", l)
		}
	}
}

// A client that quotes its own bearer token in a message body (a tool's argument) does not
// get it written to the trace.
func TestTraceRedactsTheRequestsOwnBearerToken(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	c.rpc("2", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "my token is alice-rw, keep it"}})
	found := false
	for _, rec := range traceRecords(t, f) {
		body, _ := rec["body"].(string)
		if strings.Contains(body, "my token is") {
			found = true
			if strings.Contains(body, "alice-rw") {
				t.Errorf("the trace quotes the request's bearer token: %.300s", body)
			}
		}
	}
	if !found {
		t.Fatal("no client_to_gateway trace line of the tools/call")
	}
}

// A token the worker does not hold (worker_credential: none, or a refreshed one) that a worker
// echoes is taken out of every trace line too: any JWS in compact form is.
func TestTraceRedactsEveryJWT(t *testing.T) {
	const jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXBhcnQ"
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	r := c.rpc("2", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "carry " + jwt}})
	if r.status != http.StatusOK || !strings.Contains(string(r.body), jwt) {
		t.Fatalf("echo: status %d, body %.300s: want the token echoed to the client", r.status, r.body)
	}
	lines := 0
	for _, rec := range f.log.records(t) {
		if rec["msg"] != "trace" {
			continue
		}
		lines++
		if body, _ := rec["body"].(string); strings.Contains(body, "c2lnbmF0dXJlLXBhcnQ") {
			t.Errorf("a %v trace line quotes the token: %.300s", rec["direction"], body)
		}
	}
	if lines < 4 {
		t.Errorf("%d trace lines, want the call's way there and back", lines)
	}
}

// A token never reaches the trace, whether a client sent it as a form body (RFC 6750's
// access_token parameter, which gemgate does not accept) or inside any JSON field named like
// a credential, in either direction.
func TestTraceRedactsCredentials(t *testing.T) {
	f := newFixture(t)
	// A form body without a bearer header: refused with 401 and traced.
	form := "access_token=SECRET-FORM-1&scope=mcp%3Ause&client_secret=SECRET-FORM-2&refresh%5Ftoken=SECRET-FORM-3"
	if r := f.client("").post(form, "Content-Type", "application/x-www-form-urlencoded"); r.status != http.StatusUnauthorized {
		t.Fatalf("form body: status %d", r.status)
	}
	c := f.client("alice-rw")
	c.open()
	args := map[string]any{"text": "visible-text", "password": "SECRET-JSON-1", "api_key": "SECRET-JSON-2",
		"nested":   []any{map[string]any{"Access_Token": "SECRET-JSON-3", "clientSecret": map[string]any{"v": "SECRET-JSON-4"}}},
		"id_token": 987654321, "progressToken": "visible-progress"}
	c.rpc("2", "tools/call", map[string]any{"name": "echo", "arguments": args})
	logs := f.log.String()
	for _, secret := range []string{"SECRET-FORM-1", "SECRET-FORM-2", "SECRET-FORM-3", "SECRET-JSON-1", "SECRET-JSON-2", "SECRET-JSON-3", "SECRET-JSON-4", "987654321"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the trace shows %s", secret)
		}
	}
	for _, kept := range []string{"visible-text", "visible-progress", `scope=mcp%3Ause`, `\"password\":\"[redacted]\"`} {
		if !strings.Contains(logs, kept) {
			t.Errorf("the trace lost %s", kept)
		}
	}
}
