package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Rev13: a GET stream, a resumed POST stream and a listen end when their token is no longer
// accepted (streamDone), but a POST's own SSE answer does not: a long-running tools/call made
// with a token about to expire keeps its stream, and delivers the session's messages (the
// call's progress, the worker's requests related to the call, its answer) for as long as the
// call runs, after the token's AcceptedUntil. The same call's stream, once resumed by GET
// with Last-Event-ID, is cut at that instant. Expected: the POST's stream ends too.
func TestRev13PostStreamOutlivesItsToken(t *testing.T) {
	deadline := time.Now().Add(1500 * time.Millisecond)
	f := expiringFixture(t, deadline)
	c := f.client("alice-short")
	c.open()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "s", "method": "tools/call",
		"params": map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 5, "progress": true},
			"_meta": map[string]any{"progressToken": "p"}}})
	resp := c.postStreaming(ctx, string(body), "Accept", "text/event-stream, application/json")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("slow: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	var after []string
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && time.Now().After(deadline.Add(200*time.Millisecond)) {
			after = append(after, data)
		}
	}
	if len(after) > 0 {
		t.Errorf("the POST stream of a call made with a token accepted until %s delivered %d messages after it (last %s); want it ended, as a GET or resumed POST stream is",
			deadline.Format(time.TimeOnly), len(after), after[len(after)-1])
	}
}
