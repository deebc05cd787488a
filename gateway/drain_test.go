package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/jsonrpc"
)

// While draining, work that needs this replica gets a retryable 503 (nothing was started for
// it), and work that belongs here is served: requests in open sessions, sessionless requests of a
// user whose worker runs here, and the session's open GET stream.
func TestDrainRules(t *testing.T) {
	f := newSessionlessFixture(t)
	alice := f.client("alice-rw")
	alice.open() // alice's worker runs here
	st := alice.openStream()
	// The demo speaks 2026-07-28, so alice's sessionless requests have a sessionless worker of
	// their own (sessionless/worker.go): one sessionless request before the drain starts it.
	if r := f.client("alice-rw").sessionless(`"m0"`, "tools/list", nil); r.status != http.StatusOK {
		t.Fatalf("sessionless request before the drain: %d %s", r.status, r.body)
	}
	// alice read-only has a legacy session, so a legacy worker, but no sessionless one.
	f.client("alice-ro").open()
	if w := workersRunning(t, f); w != 3 {
		t.Fatalf("%d workers before the drain, want alice's three (read-write legacy and sessionless, read-only legacy)", w)
	}

	f.gw.BeginDrain()

	tests := []struct {
		name       string
		do         func() reply
		status     int
		retryAfter bool   // a 503 a balancer may retry elsewhere, with Retry-After
		errorID    string // the JSON-RPC error's id; "" when the answer is a result
	}{
		{"initialize (a new legacy session)", func() reply {
			return f.client("alice-rw").rpc(`"i1"`, "initialize", initParams("2025-06-18"))
		}, http.StatusServiceUnavailable, true, `"i1"`},
		{"sessionless request of a user without a worker here", func() reply {
			return f.client("bob-rw").sessionless(`"b1"`, "tools/list", nil)
		}, http.StatusServiceUnavailable, true, `"b1"`},
		{"sessionless request of the same user in another access mode, whose only worker here is a legacy one", func() reply {
			return f.client("alice-ro").sessionless(`"r1"`, "tools/list", nil)
		}, http.StatusServiceUnavailable, true, `"r1"`},
		{"sessionless request of a user whose worker is here", func() reply {
			return f.client("alice-rw").sessionless(`"a1"`, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}})
		}, http.StatusOK, false, ""},
		{"request in an open legacy session", func() reply {
			return alice.callTool(`"s1"`, "whoami", map[string]any{})
		}, http.StatusOK, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.do()
			if r.status != tt.status {
				t.Fatalf("status %d, want %d; body %s", r.status, tt.status, r.body)
			}
			if got := r.header.Get("Retry-After"); (got != "") != tt.retryAfter {
				t.Errorf("Retry-After %q, want one: %v", got, tt.retryAfter)
			}
			m := r.only(t)
			if tt.errorID == "" {
				if m.Error != nil {
					t.Errorf("want a result, got %s", r.body)
				}
				return
			}
			if m.Error == nil || string(m.ID) != tt.errorID {
				t.Errorf("want a JSON-RPC error with id %s, got %s", tt.errorID, r.body)
			}
		})
	}
	if w := workersRunning(t, f); w != 3 {
		t.Errorf("%d workers after the refusals, want alice's 3: a refused request must not start one", w)
	}
	if status, body := getBody(t, f.srv.URL+"/readyz"); status != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining = %d %q, want 503", status, body)
	}
	if status, _ := getBody(t, f.srv.URL+"/healthz"); status != http.StatusOK {
		t.Errorf("/healthz while draining = %d, want 200: the process is alive", status)
	}
	// The session's GET stream is still live: a change the worker announces reaches it.
	if r := alice.callTool(`"t1"`, "toggle_extra_tool", map[string]any{}); r.only(t).Error != nil {
		t.Fatalf("toggle_extra_tool: %s", r.body)
	}
	for {
		m, ok := st.next(10 * time.Second)
		if !ok {
			t.Fatal("the GET stream ended or went silent while draining")
		}
		if m.Method == "notifications/tools/list_changed" {
			break
		}
	}
}

// rawStream sends one request and returns the answer's body as SSE lines, read as they come.
func rawStream(t *testing.T, c *client, method, body string, header ...string) (*http.Response, <-chan string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := c.newRequest(ctx, method, rd, header...)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return resp, lines
}

// untilData reads lines up to the first data line that holds a message, within d.
func untilData(t *testing.T, lines <-chan string, d time.Duration) *jsonrpc.Message {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended before a message")
			}
			if data, ok := strings.CutPrefix(l, "data: "); ok && data != "" {
				m, err := jsonrpc.Parse([]byte(data), jsonrpc.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
		case <-deadline:
			t.Fatalf("no message within %v", d)
		}
	}
}

// rest is every line until the stream ends, within d.
func rest(t *testing.T, lines <-chan string, d time.Duration) []string {
	t.Helper()
	deadline := time.After(d)
	var out []string
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return out
			}
			out = append(out, l)
		case <-deadline:
			t.Fatalf("the stream did not end within %v; so far %q", d, out)
		}
	}
}

// BeginShutdown ends GET streams with a reconnection hint (an SSE retry field), so that a
// client comes back after the balancer has moved it, rather than at the priming delay.
func TestShutdownEndsStreamsWithRetryHint(t *testing.T) {
	f := newSessionlessFixture(t)
	c := f.client("alice-rw")
	c.open()
	resp, lines := rawStream(t, c, http.MethodGet, "", "Accept", "text/event-stream")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	eventually(t, 5*time.Second, "the stream to be open", func() bool { return metricValue(t, f, "gemgate_sse_streams_open") == 1 })
	f.gw.BeginShutdown()
	got := rest(t, lines, 5*time.Second)
	hint := ""
	for _, l := range got {
		if v, ok := strings.CutPrefix(l, "retry: "); ok {
			hint = v // the last one counts
		}
	}
	if hint != "5000" {
		t.Errorf("the stream's last retry field is %q, want 5000 (ms); lines %q", hint, got)
	}
}

// At Close, a call still in flight gets a JSON-RPC error for its id: as an event on its SSE
// stream when one is open, as the body otherwise, and never a 503 (the call may have run,
// and a balancer retries a 503 on another replica).
func TestCloseAnswersCallsInFlight(t *testing.T) {
	slowSessionless := func(id string) string {
		meta := sessionlessMeta()
		meta["progressToken"] = "p-" + id
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "tools/call",
			"params": map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 60, "progress": true}, "_meta": meta}})
		return string(b)
	}
	sessionlessHeaders := []string{sessionless.HeaderProtocolVersion, sessionless.Version, sessionless.HeaderMethod, "tools/call", sessionless.HeaderName, "slow"}
	tests := []struct {
		name   string
		start  func(c *client) (*http.Response, <-chan string)
		stream bool // the call's answer is an SSE stream that started before Close
	}{
		{"legacy call on an SSE stream", func(c *client) (*http.Response, <-chan string) {
			c.open()
			return rawStream(t, c, http.MethodPost, rpcBody(`"x"`, "tools/call", slowParams(60, true, "tok")))
		}, true},
		{"sessionless call on an SSE stream", func(c *client) (*http.Response, <-chan string) {
			return rawStream(t, c, http.MethodPost, slowSessionless(`"x"`), sessionlessHeaders...)
		}, true},
		{"sessionless call answered as JSON", func(c *client) (*http.Response, <-chan string) {
			return rawStream(t, c, http.MethodPost, slowSessionless(`"x"`), append(sessionlessHeaders, "Accept", "application/json")...)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSessionlessFixture(t)
			c := f.client("alice-rw")
			var resp *http.Response
			var lines <-chan string
			done := make(chan struct{})
			go func() { defer close(done); resp, lines = tt.start(c) }()
			if tt.stream {
				<-done
				if m := untilData(t, lines, 10*time.Second); m.Method != "notifications/progress" {
					t.Fatalf("first message %s, want progress", m.Encode())
				}
			} else {
				// The call is at the worker once its line to the worker is in the trace.
				eventually(t, 10*time.Second, "the call to reach the worker", func() bool {
					for _, rec := range f.log.records(t) {
						if rec["direction"] == "to_worker" && strings.Contains(fmt.Sprint(rec["body"]), `"slow"`) {
							return true
						}
					}
					return false
				})
			}
			f.gw.BeginShutdown()
			f.gw.Close()
			<-done
			if !tt.stream {
				if resp.StatusCode != http.StatusOK {
					t.Errorf("status %d, want 200 with a JSON-RPC error (a 503 would be retried elsewhere)", resp.StatusCode)
				}
			}
			got := rest(t, lines, 10*time.Second)
			var last *jsonrpc.Message
			for _, l := range got {
				data, ok := strings.CutPrefix(l, "data: ")
				if !tt.stream {
					data, ok = l, strings.HasPrefix(l, "{")
				}
				if ok && data != "" {
					if m, err := jsonrpc.Parse([]byte(data), jsonrpc.Options{}); err == nil {
						last = m
					}
				}
			}
			if last == nil || last.Error == nil || string(last.ID) != `"x"` {
				t.Fatalf("the call cut by Close got no JSON-RPC error for its id; lines %q", got)
			}
		})
	}
}
