package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/pool"
)

// keepalives returns a channel that gets each keepalive comment an SSE body carries, and a
// data line's text for any other event; it is closed when the body ends.
func keepalives(body io.Reader) <-chan string {
	out := make(chan string, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(body)
		for sc.Scan() {
			switch line := sc.Text(); {
			case line == ": keepalive":
				out <- "keepalive"
			case strings.HasPrefix(line, "data: "):
				out <- line
			}
		}
	}()
	return out
}

// waitKeepalives waits for n keepalive comments on lines, skipping data, each within
// within of the one before (of the call, for the first).
func waitKeepalives(t *testing.T, lines <-chan string, n int, within time.Duration) {
	t.Helper()
	for seen := 0; seen < n; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the stream ended after %d keepalives, want %d", seen, n)
			}
			if l == "keepalive" {
				seen++
			}
		case <-time.After(within):
			t.Fatalf("no keepalive within %v after %d of them, want %d", within, seen, n)
		}
	}
}

// TestStreamsCarryKeepalives: a GET stream, a resumed POST stream and a subscriptions/listen
// stream each carry a keepalive comment at least every keepalive interval while they have
// nothing else to say, so that no proxy's idle timeout ends them.
func TestStreamsCarryKeepalives(t *testing.T) {
	// A keepalive may wait on a busy machine, but not for seconds: the bound still tells
	// this interval from the 15 s one.
	const interval, within = 80 * time.Millisecond, 3 * time.Second
	f := newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.keepaliveInterval = interval
	})
	c := f.client("alice-rw")
	c.open()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("GET stream", func(t *testing.T) {
		req, err := c.newRequest(ctx, http.MethodGet, nil, "Accept", "text/event-stream")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET: %v %v", err, resp)
		}
		defer resp.Body.Close()
		waitKeepalives(t, keepalives(resp.Body), 3, within)
	})

	t.Run("resumed POST stream", func(t *testing.T) {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "k-1", "method": "tools/call", "params": slowParams(30, true, "k-tok")})
		postCtx, cut := context.WithCancel(ctx)
		resp := c.postStreaming(postCtx, string(body))
		prime, _ := nextEvent(t, readEvents(resp.Body))
		cut()
		resp.Body.Close()
		defer c.post(rpcBody("", "notifications/cancelled", map[string]any{"requestId": "k-1"}))
		gresp := c.resumeStream(ctx, prime.id)
		defer gresp.Body.Close()
		waitKeepalives(t, keepalives(gresp.Body), 3, within)
	})

	t.Run("listen stream", func(t *testing.T) {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "L-k", "method": "subscriptions/listen",
			"params": map[string]any{"_meta": sessionlessMeta(), "notifications": map[string]any{"toolsListChanged": true}}})
		// A client of its own: a 2026-07-28 request carries no session.
		resp := f.client("alice-rw").postStreaming(ctx, string(body), sessionless.HeaderProtocolVersion, sessionless.Version, sessionless.HeaderMethod, "subscriptions/listen")
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("listen: %d", resp.StatusCode)
		}
		lines := keepalives(resp.Body)
		if first := <-lines; !strings.Contains(first, "notifications/subscriptions/acknowledged") {
			t.Fatalf("the listen stream's first line %q", first)
		}
		waitKeepalives(t, lines, 3, within)
	})
}
