package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// A client's answer to an id the gateway never sent is logged (debug) with its id clipped:
// JSON-RPC ids have no length limit in the strict reader, and one POST of a response whose id
// is a megabyte of digits must not make a log line of a megabyte, as no other client text
// gemgate logs does (the tool name is cut at 256 bytes, X-Request-Id and Mcp-Session-Id at
// 128 visible ASCII bytes, claims at 64).
func TestClientAnswerIDIsClippedInLog(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	id := strings.Repeat("9", 1<<20)
	r := c.post(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)
	if r.status != http.StatusAccepted {
		t.Fatalf("the answer: status %d, body %.200s", r.status, r.body)
	}
	const bound = 8 << 10
	for _, l := range strings.Split(f.log.String(), "\n") {
		if len(l) > bound && !strings.Contains(l, `"msg":"trace"`) {
			t.Fatalf("a log line of %d bytes (bound %d) from a client's answer id of %d bytes:\n%.300s...", len(l), bound, len(id), l)
		}
	}
}
