package test

import (
	"net/http"
	"strings"
	"testing"
)

// TestAttackTraceQuotesNoEchoedCredential: with worker_credential: passthrough the worker
// holds the user's live bearer token, and with trace_messages every message is logged. The
// client has the demo worker echo that token back. The answer goes to the client as the worker
// wrote it (the token is the client's own), but no line of gemgate's log holds the token: not
// the client's request (client_to_gateway), not the worker's line (from_worker), and not the
// answer on its way back (gateway_to_client), which was once written verbatim.
func TestAttackTraceQuotesNoEchoedCredential(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--worker-credential", "passthrough", "--trace-messages")
	token := g.Tokens["alice"]
	c := rawClient{t: t, url: g.URL, token: token}
	session := c.initialize()
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + token + `"}}}`
	r := c.do("POST", session, []byte(call), nil)
	msgs := r.messages(t)
	if r.status != http.StatusOK || len(msgs) == 0 || !strings.Contains(string(msgs[len(msgs)-1].Result), token) {
		t.Fatalf("echo of the token: status %d, body %.300s: want the worker's answer quoting it", r.status, r.body)
	}
	directions := map[string]int{}
	for _, e := range g.logEvents("trace") {
		if d, _ := e["direction"].(string); d != "" {
			directions[d]++
		}
	}
	for _, d := range []string{"client_to_gateway", "to_worker", "from_worker", "gateway_to_client"} {
		if directions[d] == 0 {
			t.Errorf("no %s trace line: the trace is not on as the test needs (%v)", d, directions)
		}
	}
	// The token's signature alone would do an attacker's work: look for it, not the whole token.
	sig := token[strings.LastIndexByte(token, '.')+1:]
	for _, l := range strings.Split(g.logs.String(), "\n") {
		if strings.Contains(l, sig) {
			t.Errorf("a log line holds alice's bearer token: %.400s", l)
		}
	}
}
