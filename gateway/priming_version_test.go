package gateway

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// emptyDataEvent reports whether an SSE body has an event whose data is empty (a priming
// event) before its first message, within its first n lines.
func emptyDataEvent(t *testing.T, body io.Reader, n int) bool {
	t.Helper()
	sc := bufio.NewScanner(body)
	for i := 0; i < n && sc.Scan(); i++ {
		line := sc.Text()
		if line == "data:" || line == "data: " {
			return true
		}
		if strings.HasPrefix(line, "data:") {
			return false // the first message's data came first
		}
	}
	return false
}

// A priming event (an id and empty data, SEP-1699) is sent only to a session of 2025-11-25 or
// later, as the reference SDK servers send it: a client of an earlier revision parses each
// event's data as a JSON-RPC message, and one with empty data fails it (the Python SDK's
// client stopped on it). Its events still carry ids, from which it can resume.
func TestPrimingEventOnlyForSessionsThatExpectIt(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		version string
		primed  bool
	}{
		{"2025-03-26", false},
		{"2025-06-18", false},
		{"2025-11-25", true},
	} {
		c := f.client("alice-rw")
		r := c.rpc("1", "initialize", initParams(tt.version))
		if r.status != http.StatusOK {
			t.Fatalf("initialize %s: %d %s", tt.version, r.status, r.body)
		}
		c.session, c.version = r.header.Get(headerSessionID), tt.version

		post := c.post(rpcBody("2", "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}))
		if !strings.HasPrefix(post.contentType(), "text/event-stream") {
			t.Fatalf("%s: whoami answered %q, want an SSE stream", tt.version, post.contentType())
		}
		if got := emptyDataEvent(t, strings.NewReader(string(post.body)), 100); got != tt.primed {
			t.Errorf("%s session: a POST's answer stream has a priming event: %v, want %v (%q)", tt.version, got, tt.primed, post.body)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, err := c.newRequest(ctx, http.MethodGet, nil, "Accept", "text/event-stream")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: GET %d", tt.version, resp.StatusCode)
		}
		// A message for the stream: what comes before its data is the stream's start.
		c.sessionObj().outbox.Push([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
		got := emptyDataEvent(t, resp.Body, 100)
		cancel()
		resp.Body.Close()
		if got != tt.primed {
			t.Errorf("%s session: its GET stream starts with a priming event: %v, want %v", tt.version, got, tt.primed)
		}
	}
}
