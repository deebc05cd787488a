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

	"github.com/gemgate/gemgate/pool"
)

// TestKeepaliveSlotsTakeTurns: streams are spread over the clock's slots in turn.
func TestKeepaliveSlotsTakeTurns(t *testing.T) {
	k := startKeepaliveClock(time.Hour)
	defer k.stop()
	for n := range 3 * keepaliveSlots {
		if s := k.slot(); s.i != uint32(n%keepaliveSlots) {
			t.Fatalf("slot %d handed out as %d", n, s.i)
		}
	}
}

// TestKeepaliveClockTicksEverySlot: every slot ticks, and ticks again, with its streams
// taking the slot's channel anew after each tick.
func TestKeepaliveClockTicksEverySlot(t *testing.T) {
	k := startKeepaliveClock(48 * time.Millisecond)
	defer k.stop()
	for range keepaliveSlots {
		s := k.slot()
		for tick := range 2 {
			select {
			case <-s.tick():
			case <-time.After(10 * time.Second):
				t.Fatalf("slot %d: tick %d never came", s.i, tick)
			}
		}
	}
}

// TestKeepaliveClockStops: stop ends the clock's goroutine, and no slot ticks after it.
func TestKeepaliveClockStops(t *testing.T) {
	k := startKeepaliveClock(16 * time.Millisecond)
	s := k.slot()
	<-s.tick()
	k.stop()
	k.stop() // again, as a second Gateway.Close does
	select {
	case <-k.done:
	default:
		t.Fatal("the clock's goroutine runs on after stop")
	}
	select {
	case <-s.tick():
		t.Fatal("a slot ticked after stop")
	case <-time.After(100 * time.Millisecond):
	}
}

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

// waitKeepalives waits for n keepalive comments on lines, skipping data.
func waitKeepalives(t *testing.T, lines <-chan string, n int) {
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
		case <-time.After(10 * time.Second):
			t.Fatalf("%d keepalives within 10s, want %d", seen, n)
		}
	}
}

// TestStreamsCarryKeepalives: a GET stream, a resumed POST stream and a subscriptions/listen
// stream each carry a keepalive comment at least every keepalive interval while they have
// nothing else to say, so that no proxy's idle timeout ends them.
func TestStreamsCarryKeepalives(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.keepaliveInterval = 80 * time.Millisecond
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
		waitKeepalives(t, keepalives(resp.Body), 3)
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
		waitKeepalives(t, keepalives(gresp.Body), 3)
	})

	t.Run("listen stream", func(t *testing.T) {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "L-k", "method": "subscriptions/listen",
			"params": map[string]any{"_meta": modernMeta(), "notifications": map[string]any{"toolsListChanged": true}}})
		// A client of its own: a 2026-07-28 request carries no session.
		resp := f.client("alice-rw").postStreaming(ctx, string(body), headerProtocolVersion, modernVersion, headerMethod, "subscriptions/listen")
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("listen: %d", resp.StatusCode)
		}
		lines := keepalives(resp.Body)
		if first := <-lines; !strings.Contains(first, "notifications/subscriptions/acknowledged") {
			t.Fatalf("the listen stream's first line %q", first)
		}
		waitKeepalives(t, lines, 3)
	})
}
