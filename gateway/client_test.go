package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// client speaks to the fixture's /mcp endpoint as one MCP client.
type client struct {
	f       *fixture
	token   string
	session string
	version string // MCP-Protocol-Version sent after initialize
}

func (f *fixture) client(token string) *client { return &client{f: f, token: token} }

// reply is an HTTP answer with the JSON-RPC messages in it: the JSON body, or every SSE event.
type reply struct {
	status int
	header http.Header
	body   []byte
	msgs   []*jsonrpc.Message
}

func (r reply) contentType() string { return r.header.Get("Content-Type") }

// only is the single message of the reply.
func (r reply) only(t *testing.T) *jsonrpc.Message {
	t.Helper()
	if len(r.msgs) != 1 {
		t.Fatalf("want one message, got %d (status %d, body %q)", len(r.msgs), r.status, r.body)
	}
	return r.msgs[0]
}

func (c *client) request(ctx context.Context, method, body string, header ...string) reply {
	c.f.t.Helper()
	r, err := c.do(ctx, method, body, header...)
	if err != nil {
		c.f.t.Fatal(err)
	}
	return r
}

// do is request for goroutines other than the test's: it reports instead of failing.
func (c *client) do(ctx context.Context, method, body string, header ...string) (reply, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := c.newRequest(ctx, method, rd, header...)
	if err != nil {
		return reply{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, fmt.Errorf("%s: reading the answer: %w", method, err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: b}
	var msgs [][]byte
	switch {
	case strings.HasPrefix(r.contentType(), "text/event-stream"):
		for _, data := range sseData(b) {
			msgs = append(msgs, []byte(data))
		}
	case strings.HasPrefix(r.contentType(), "application/json") && bytes.Contains(b, []byte(`"jsonrpc"`)):
		msgs = append(msgs, b) // not an OAuth error body such as a 401's
	}
	for _, m := range msgs {
		msg, err := jsonrpc.Parse(m, jsonrpc.Options{})
		if err != nil {
			return r, fmt.Errorf("not a JSON-RPC message: %v: %q", err, m)
		}
		r.msgs = append(r.msgs, msg)
	}
	return r, nil
}

func (c *client) newRequest(ctx context.Context, method string, body io.Reader, header ...string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.f.url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.session != "" {
		req.Header.Set(headerSessionID, c.session)
	}
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	return req, nil
}

// postStreaming sends a POST and returns its response unread: for an answer that streams
// (an SSE call in progress, a subscriptions/listen), which the test reads as it comes.
// resumeStream asks by GET to resume the stream after lastID, and fails the test unless the
// answer is 200; the body is the caller's to read and close.
func (c *client) resumeStream(ctx context.Context, lastID string) *http.Response {
	t := c.f.t
	t.Helper()
	req, err := c.newRequest(ctx, http.MethodGet, nil, "Accept", "text/event-stream", "Last-Event-ID", lastID)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("resume after %s: status %d", lastID, resp.StatusCode)
	}
	return resp
}

func (c *client) postStreaming(ctx context.Context, body string, header ...string) *http.Response {
	t := c.f.t
	t.Helper()
	req, err := c.newRequest(ctx, http.MethodPost, strings.NewReader(body), header...)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (c *client) post(body string, header ...string) reply {
	c.f.t.Helper()
	return c.request(context.Background(), http.MethodPost, body, header...)
}

// rpc POSTs one request; id is written as raw JSON.
func (c *client) rpc(id, method string, params any) reply {
	c.f.t.Helper()
	return c.post(rpcBody(id, method, params))
}

func rpcBody(id, method string, params any) string {
	p, err := json.Marshal(params)
	if err != nil {
		panic(err)
	}
	if id == "" {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s}`, method, p)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, p)
}

func initParams(version string) map[string]any {
	return map[string]any{"protocolVersion": version, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "gateway-test", "version": "0"}}
}

// open initializes a session and sends notifications/initialized.
func (c *client) open() reply {
	c.f.t.Helper()
	r := c.rpc("1", "initialize", initParams("2025-11-25"))
	if r.status != http.StatusOK || r.header.Get(headerSessionID) == "" {
		c.f.t.Fatalf("initialize: status %d, session %q, body %s", r.status, r.header.Get(headerSessionID), r.body)
	}
	if m := r.only(c.f.t); m.Error != nil {
		c.f.t.Fatalf("initialize failed: %s", m.Error)
	}
	c.session = r.header.Get(headerSessionID)
	c.version = "2025-11-25"
	if n := c.rpc("", "notifications/initialized", map[string]any{}); n.status != http.StatusAccepted {
		c.f.t.Fatalf("notifications/initialized: status %d", n.status)
	}
	return r
}

// callTool runs tools/call and returns the reply.
func (c *client) callTool(id, name string, args any) reply {
	c.f.t.Helper()
	return c.rpc(id, "tools/call", map[string]any{"name": name, "arguments": args})
}

// sseData returns the data of every event in an SSE body.
func sseData(b []byte) []string {
	var out []string
	var data []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 32<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			// An event with empty data (a stream's priming event) carries no message: MCP
			// clients skip it, and so does this one.
			if joined := strings.Join(data, "\n"); joined != "" {
				out = append(out, joined)
			}
			data = nil
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if len(data) > 0 {
		out = append(out, strings.Join(data, "\n"))
	}
	return out
}

// stream is an open GET stream of a session.
type stream struct {
	msgs   chan *jsonrpc.Message // closed when the stream ends
	cancel context.CancelFunc
	done   chan struct{}
}

// openStream opens the session's GET stream; it fails the test unless the answer is 200 SSE.
func (c *client) openStream() *stream {
	t := c.f.t
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := c.newRequest(ctx, http.MethodGet, nil, "Accept", "text/event-stream")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		cancel()
		t.Fatalf("GET: status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	st := &stream{msgs: make(chan *jsonrpc.Message, 1024), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(st.done)
		defer close(st.msgs)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 32<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				if m, err := jsonrpc.Parse([]byte(data), jsonrpc.Options{}); err == nil {
					st.msgs <- m
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-st.done })
	return st
}

// next is the next message on the stream; ok is false when the stream ended or d passed.
func (st *stream) next(d time.Duration) (m *jsonrpc.Message, ok bool) {
	select {
	case m, ok = <-st.msgs:
		return m, ok
	case <-time.After(d):
		return nil, false
	}
}

// ended reports whether the stream ends within d (messages still queued are skipped).
func (st *stream) ended(d time.Duration) bool {
	select {
	case <-st.done:
		return true
	case <-time.After(d):
		return false
	}
}
