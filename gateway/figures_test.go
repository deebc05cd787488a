package gateway

// The figures README.md and docs state, read as numbers rather than through the constants'
// names: a test that follows a constant lets the documented figure change unnoticed.

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gemgate/gemgate/gateway/sessions"
)

// TestKeepaliveEveryFifteenSeconds: with no interval set, as gemgate runs, each stream's
// keepalive ticker first ticks within 15 s of the stream's start and then every 15 s exactly
// (README: "keepalive every 15 s").
func TestKeepaliveEveryFifteenSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t, sessions.Lifetime{})
		const interval = 15 * time.Second
		for i := range 3 { // streams of their own
			start := time.Now()
			s := b.gw.keepaliveTicker()
			<-s.C
			if first := time.Since(start); first > interval || first <= 0 {
				t.Fatalf("stream %d: first keepalive %v after its start, want within %v", i, first, interval)
			}
			at := time.Now()
			<-s.C
			if gap := time.Since(at); gap != interval {
				t.Fatalf("stream %d: keepalives %v apart, want %v", i, gap, interval)
			}
		}
	})
}

// TestPrimingEventAnnouncesRetry1000: every SSE stream, the GET stream and a POST answer
// stream, starts with a priming event with an id and "retry: 1000" (README).
func TestPrimingEventAnnouncesRetry1000(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	first := func(what string, b *bufio.Reader) []string {
		t.Helper()
		var lines []string
		for {
			line, err := b.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v after %q", what, err, lines)
			}
			line = strings.TrimSuffix(line, "\n")
			if line == "" {
				return lines
			}
			lines = append(lines, line)
		}
	}
	check := func(what string, ev []string) {
		t.Helper()
		if len(ev) != 3 || !strings.HasPrefix(ev[0], "id: ") || ev[1] != "retry: 1000" || ev[2] != "data: " {
			t.Errorf("%s starts with the event %q, want id, \"retry: 1000\", empty data", what, ev)
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := c.newRequest(ctx, http.MethodGet, nil, "Accept", "text/event-stream")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	check("the GET stream", first("the GET stream", bufio.NewReader(resp.Body)))

	r := c.callTool("2", "echo", map[string]any{"text": "x"})
	if !strings.HasPrefix(r.contentType(), "text/event-stream") {
		t.Fatalf("POST answer: Content-Type %q", r.contentType())
	}
	check("a POST answer stream", first("a POST answer stream", bufio.NewReader(strings.NewReader(string(r.body)))))
}
