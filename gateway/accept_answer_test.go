package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// The answer's form follows the Accept header as the call was admitted by it, q values
// included: a client that refuses SSE (q=0) but takes JSON gets JSON, and one that takes
// both gets SSE.
func TestAnswerFormFollowsAcceptQValues(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	for _, tt := range []struct{ accept, want string }{
		{"application/json, text/event-stream;q=0", "application/json"},
		{"application/json;q=0.5, text/event-stream", "text/event-stream"},
		{"application/json", "application/json"},
	} {
		r := c.post(rpcBody("5", "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}), "Accept", tt.accept)
		if ct := r.contentType(); r.status != http.StatusOK || !strings.HasPrefix(ct, tt.want) {
			t.Errorf("Accept %q: status %d, Content-Type %q, want %s", tt.accept, r.status, ct, tt.want)
		}
	}
}
