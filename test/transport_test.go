package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolVersion is the revision the raw-HTTP tests speak.
const protocolVersion = "2025-11-25"

// rawClient speaks Streamable HTTP by hand, to see statuses, headers and ids the SDK hides.
type rawClient struct {
	t     *testing.T
	url   string
	token string
}

type rawResp struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request. hdr may override Accept, Content-Type, Mcp-Protocol-Version or add
// Origin; a header set to "" is removed.
func (c rawClient) do(method, session string, body []byte, hdr map[string]string) rawResp {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.url, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", protocolVersion)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, c.url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: reading body: %v", method, c.url, err)
	}
	return rawResp{status: resp.StatusCode, header: resp.Header, body: b}
}

// initialize opens a session by hand and returns its id.
func (c rawClient) initialize() string {
	c.t.Helper()
	r := c.do("POST", "", []byte(`{"jsonrpc":"2.0","id":"init-1","method":"initialize","params":{"protocolVersion":"`+protocolVersion+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`), nil)
	id := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || id == "" {
		c.t.Fatalf("initialize: status %d, session %q, body %s", r.status, id, r.body)
	}
	if n := c.do("POST", id, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nil); n.status != http.StatusAccepted {
		c.t.Fatalf("notifications/initialized: status %d, body %s", n.status, n.body)
	}
	return id
}

// rpcMessage is one JSON-RPC message with the fields the tests look at.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// messages reads the JSON-RPC messages of a response: one JSON body or an SSE stream.
func (r rawResp) messages(t *testing.T) []rpcMessage {
	t.Helper()
	ct := r.header.Get("Content-Type")
	var raws [][]byte
	switch {
	case strings.HasPrefix(ct, "application/json"):
		raws = append(raws, r.body)
	case strings.HasPrefix(ct, "text/event-stream"):
		sc := bufio.NewScanner(bytes.NewReader(r.body))
		sc.Buffer(nil, 32<<20)
		var data []byte
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
			case line == "" && len(data) > 0:
				raws = append(raws, data)
				data = nil
			}
		}
		if len(data) > 0 {
			raws = append(raws, data)
		}
	default:
		t.Fatalf("response Content-Type %q, status %d, body %s", ct, r.status, r.body)
	}
	var out []rpcMessage
	for _, b := range raws {
		var m rpcMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("not a JSON-RPC message: %s", b)
		}
		out = append(out, m)
	}
	return out
}

// logEvents returns gemgate's JSON log lines whose msg is msg.
func (g *gemgate) logEvents(msg string) []map[string]any {
	g.logs.mu.Lock()
	lines := append([]string(nil), g.logs.lines...)
	g.logs.mu.Unlock()
	var out []map[string]any
	for _, l := range lines {
		var ev map[string]any
		if json.Unmarshal([]byte(l), &ev) == nil && ev["msg"] == msg {
			out = append(out, ev)
		}
	}
	return out
}

// workerPID is the pid gemgate logged when it opened the session.
func (g *gemgate) workerPID(t *testing.T, session string) int {
	t.Helper()
	var pid int
	pollUntil(t, 10*time.Second, "a \"session opened\" log line with a pid for session "+session, func() bool {
		for _, ev := range g.logEvents("session opened") {
			if p, ok := ev["pid"].(float64); ok && ev["session"] == session {
				pid = int(p)
				return true
			}
		}
		return false
	})
	return pid
}

// waitLog waits until a log line contains s.
func (g *gemgate) waitLog(s string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if strings.Contains(g.logs.String(), s) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func TestInitializeListAndCall(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	var cs *mcp.ClientSession = connect(t, g.URL, g.Tokens["alice"], nil)
	if got := cs.InitializeResult(); got == nil || got.ServerInfo == nil || got.ServerInfo.Name == "" {
		t.Fatalf("initialize result has no server info: %+v", got)
	}
	names := toolNames(t, cs)
	want := []string{"delete_note", "echo", "list_notes", "read_note", "search_notes", "slow", "whoami", "write_note"}
	for _, w := range want {
		found := false
		for _, n := range names {
			found = found || n == w
		}
		if !found {
			t.Errorf("tools/list lacks %s: %v", w, names)
		}
	}
	if got := text(callTool(t, cs, "echo", map[string]any{"text": "ping ✓"})); got != "ping ✓" {
		t.Errorf("echo = %q", got)
	}
	if g.workers() != 1 {
		t.Errorf("gemgate has %d workers, want 1", g.workers())
	}
}

func TestProgressOverSSEResponse(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	var mu sync.Mutex
	var events []*mcp.ProgressNotificationParams
	cs := connect(t, g.URL, g.Tokens["alice"], &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			events = append(events, r.Params)
			mu.Unlock()
		},
	})
	params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 2, "progress": true}}
	params.SetProgressToken("tok-1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("slow: %v %v", err, res)
	}
	// The SDK may hand notifications to the handler after CallTool returned.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(events)
		mu.Unlock()
		if n >= 2 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 {
		t.Errorf("got %d progress notifications, want 2: %+v", len(events), events)
	}
	for i, ev := range events {
		if ev.ProgressToken != "tok-1" || ev.Progress != float64(i+1) || ev.Total != 2 {
			t.Errorf("progress %d = %+v", i, ev)
		}
	}

	// The same by hand: the POST answer is an SSE stream, progress first, the result last.
	c := rawClient{t: t, url: g.URL, token: g.Tokens["alice"]}
	sid := c.initialize()
	r := c.do("POST", sid, []byte(`{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":2,"progress":true},"_meta":{"progressToken":"raw-tok"}}}`), nil)
	if ct := r.header.Get("Content-Type"); r.status != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("status %d, Content-Type %q, want 200 text/event-stream", r.status, ct)
	}
	msgs := r.messages(t)
	if len(msgs) != 3 {
		t.Fatalf("got %d SSE messages, want 2 progress + result: %s", len(msgs), r.body)
	}
	for _, m := range msgs[:2] {
		if m.Method != "notifications/progress" || !strings.Contains(string(m.Params), `"raw-tok"`) {
			t.Errorf("want a progress notification for raw-tok, got %s %s", m.Method, m.Params)
		}
	}
	if last := msgs[2]; string(last.ID) != "41" || last.Result == nil {
		t.Errorf("last message: id %s, result %s, want id 41 with a result", last.ID, last.Result)
	}
}

func TestClientCancelEndsSlowCall(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	cs := connect(t, g.URL, g.Tokens["alice"], nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 30}})
		errc <- err
	}()
	// Cancel once the call runs at the worker.
	if !g.waitLog("slow: started", 20*time.Second) {
		t.Fatalf("the worker never started the slow call\nlogs:\n%s", g.logs)
	}
	cancelled := time.Now()
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled slow call returned no error")
	}
	if !g.waitLog("slow: cancelled", 10*time.Second) {
		t.Fatalf("worker did not log \"slow: cancelled\" within 10s of the cancel\nlogs:\n%s", g.logs)
	}
	t.Logf("cancel reached the worker %v after the client cancelled", time.Since(cancelled).Round(time.Millisecond))
	// The session still works after the cancel.
	if got := text(callTool(t, cs, "echo", map[string]any{"text": "after cancel"})); got != "after cancel" {
		t.Errorf("echo after cancel = %q", got)
	}
}

func TestGetStream(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	c := rawClient{t: t, url: g.URL, token: g.Tokens["alice"]}
	sid := c.initialize()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+g.Tokens["alice"])
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", protocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("GET: status %d, Content-Type %q, want 200 text/event-stream", resp.StatusCode, ct)
	}
}

// TestDelete: DELETE ends the session at once, and a call still running on it with it: the
// worker is told to cancel it and its POST is answered with an error bearing its own id, not
// left waiting for an answer nobody will read. The worker, attached to nothing else, goes
// worker_idle_timeout later.
func TestDelete(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--worker-idle-timeout", "1s")
	c := rawClient{t: t, url: g.URL, token: g.Tokens["alice"]}
	sid := c.initialize()
	g.waitWorkers(t, 1, 5*time.Second)
	got := make(chan rawResp, 1)
	go func() {
		got <- c.do("POST", sid, []byte(`{"jsonrpc":"2.0","id":"slow-1","method":"tools/call","params":{"name":"slow","arguments":{"seconds":30}}}`), nil)
	}()
	ltWaitLog(t, g, "slow: started", 10*time.Second) // the call is running at the worker
	if r := c.do("DELETE", sid, nil, nil); r.status != http.StatusOK {
		t.Fatalf("DELETE: status %d, body %s", r.status, r.body)
	}
	select {
	case r := <-got:
		if msgs := r.messages(t); len(msgs) == 0 || string(msgs[len(msgs)-1].ID) != `"slow-1"` || msgs[len(msgs)-1].Error == nil {
			t.Errorf("the call running at DELETE was answered %d %s, want an error with id \"slow-1\"", r.status, r.body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call running at DELETE was not answered within 5s")
	}
	if !g.waitLog("slow: cancelled", 10*time.Second) {
		t.Error("the worker was not told to cancel the deleted session's call")
	}
	g.waitWorkers(t, 0, 10*time.Second)
	if r := c.do("DELETE", sid, nil, nil); r.status != http.StatusNotFound {
		t.Errorf("second DELETE: status %d, want 404", r.status)
	}
	if r := c.do("POST", sid, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), nil); r.status != http.StatusNotFound {
		t.Errorf("POST after DELETE: status %d, want 404", r.status)
	}
}

func TestErrorStatuses(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	c := rawClient{t: t, url: g.URL, token: g.Tokens["alice"]}
	sid := c.initialize()
	list := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
	// Just over the 4 MiB default: gemgate reads the body to the limit, answers 413 and closes
	// the connection. The client must have written all of it by then, or the close meets
	// unsent bytes and resets the connection under the client's write: a megabyte over, on a
	// loaded machine, sometimes still was in flight.
	big := []byte(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 4<<20) + `"}}}`)
	tests := []struct {
		name    string
		method  string
		session string
		body    []byte
		hdr     map[string]string
		status  int
		code    int // JSON-RPC error code expected in the body; 0: not checked
	}{
		{"POST without session", "POST", "", list, nil, 400, -32600},
		{"GET without session", "GET", "", nil, nil, 400, 0},
		{"DELETE without session", "DELETE", "", nil, nil, 400, 0},
		{"POST unknown session", "POST", "no-such-session", list, nil, 404, 0},
		{"GET unknown session", "GET", "no-such-session", nil, nil, 404, 0},
		{"DELETE unknown session", "DELETE", "no-such-session", nil, nil, 404, 0},
		{"PUT", "PUT", sid, list, nil, 405, 0},
		{"PATCH", "PATCH", sid, list, nil, 405, 0},
		{"oversize body", "POST", sid, big, nil, 413, 0},
		{"malformed JSON", "POST", sid, []byte(`{"jsonrpc":"2.0","id":9,"method":`), nil, 400, -32700},
		{"not JSON at all", "POST", sid, []byte(`hello`), nil, 400, -32700},
		{"bad Origin", "POST", sid, list, map[string]string{"Origin": "https://evil.example"}, 403, 0},
		{"bad protocol version", "POST", sid, list, map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, 400, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rawClient{t: t, url: c.url, token: c.token}.do(tt.method, tt.session, tt.body, tt.hdr)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d; body %.300s", r.status, tt.status, r.body)
			}
			if tt.code != 0 {
				msgs := r.messages(t)
				if len(msgs) != 1 || msgs[0].Error == nil || msgs[0].Error.Code != tt.code {
					t.Fatalf("body %s, want one JSON-RPC error %d", r.body, tt.code)
				}
			}
		})
	}
	// None of it harmed the session.
	r := c.do("POST", sid, list, nil)
	if msgs := r.messages(t); r.status != 200 || len(msgs) != 1 || string(msgs[0].ID) != "7" || msgs[0].Result == nil {
		t.Errorf("tools/list after the bad requests: status %d, body %.300s", r.status, r.body)
	}
	if g.workers() != 1 {
		t.Errorf("gemgate has %d workers, want 1", g.workers())
	}
}

func TestSlowSessionDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	a := connect(t, g.URL, g.Tokens["alice"], nil)
	b := connect(t, g.URL, g.Tokens["alice"], nil)
	var mu sync.Mutex
	var order []string
	done := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 8}})
		if err != nil || res.IsError {
			t.Errorf("slow: %v %v", err, res)
		}
		done("A")
	}()
	puWaitStarted(t, g, "slow: started", 1, 20*time.Second) // A's call is running at the worker
	start := time.Now()
	if got := text(callTool(t, b, "echo", map[string]any{"text": "B"})); got != "B" {
		t.Errorf("echo = %q", got)
	}
	took := time.Since(start)
	done("B")
	<-aDone
	// Queued behind A, B would take most of A's 8s; the bound is half of that, so a loaded
	// machine under -race has room (B's echo alone takes well under a second).
	if took > 4*time.Second {
		t.Errorf("B's echo took %v while A ran slow for 8s", took)
	}
	if want := []string{"B", "A"}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("finished in order %v, want %v", order, want)
	}
}
