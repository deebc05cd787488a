package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// h2Client speaks to a gateway over HTTP/2 with TLS, as clients of gemgate's own TLS do.
type h2Client struct {
	t       *testing.T
	hc      *http.Client
	url     string
	session string
}

func (c *h2Client) req(ctx context.Context, method, body string, header ...string) *http.Response {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+longToken)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.session != "" {
		req.Header.Set(headerSessionID, c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.ProtoMajor != 2 {
		c.t.Fatalf("%s answered over %s, want HTTP/2", method, resp.Proto)
	}
	return resp
}

// post sends one message and returns the answer's messages.
func (c *h2Client) post(body string) (*http.Response, []*jsonrpc.Message) {
	c.t.Helper()
	resp := c.req(context.Background(), http.MethodPost, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	var msgs []*jsonrpc.Message
	datas := sseData(b)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && len(b) > 0 {
		datas = []string{string(b)}
	}
	for _, d := range datas {
		m, err := jsonrpc.Parse([]byte(d), jsonrpc.Options{})
		if err != nil {
			c.t.Fatalf("not a JSON-RPC message: %v: %q", err, d)
		}
		msgs = append(msgs, m)
	}
	return resp, msgs
}

// Over HTTP/2 (gemgate's own TLS), net/http fills a request's headers without the parser's
// shared array: the stream still drops the token from its headers, and forgetting it
// disturbs neither the stream nor the calls multiplexed on the same connection. (Whether
// the token is then unreachable is not asked here: a client that lets HPACK index the
// header, as Go's does, leaves the value in the connection's decoder table, which the
// gateway does not own; see forgetBearer.)
func TestStreamForgetsTokenOverHTTP2(t *testing.T) {
	f := newFixture(t, withLongTokens)
	tw := &tokenWatch{next: f.gw.Handler(), gets: make(chan watchedGet, 4)}
	type seen struct {
		values int
		slot   string
	}
	at := make(chan seen, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vals := r.Header["Authorization"]
		if r.Method != http.MethodGet || len(vals) != 1 {
			tw.ServeHTTP(w, r)
			return
		}
		tw.ServeHTTP(&onFirstWrite{ResponseWriter: w, do: func() {
			at <- seen{len(r.Header.Values("Authorization")), vals[0]}
		}}, r)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(func() {
		f.gw.BeginShutdown()
		f.gw.Close()
		srv.Close()
	})
	c := &h2Client{t: t, hc: srv.Client(), url: srv.URL + "/mcp"}

	resp, _ := c.post(rpcBody("1", "initialize", initParams("2025-06-18")))
	if c.session = resp.Header.Get(headerSessionID); resp.StatusCode != http.StatusOK || c.session == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, c.session)
	}
	if resp, _ := c.post(rpcBody("", "notifications/initialized", map[string]any{})); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d", resp.StatusCode)
	}

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	get := c.req(ctx, http.MethodGet, "", "Accept", "text/event-stream")
	t.Cleanup(func() { get.Body.Close() })
	if get.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", get.StatusCode)
	}
	g := tw.nextGet(t)
	select {
	case got := <-at:
		if got.values != 0 || got.slot != "" {
			t.Fatalf("the stream started with the token in its request: %d values, slot %q", got.values, got.slot)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream never wrote")
	}
	// Calls on the same connection, with the token they carry, are served while the stream is open.
	for _, id := range []string{"2", "3"} {
		_, msgs := c.post(rpcBody(id, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "h2 " + id}}))
		if len(msgs) != 1 {
			t.Fatalf("call %s: %d messages", id, len(msgs))
		}
		if text := toolText(t, msgs[0]); text != "h2 "+id {
			t.Fatalf("call %s: %q", id, text)
		}
	}
	select {
	case <-g.returned:
		t.Fatal("the stream ended")
	default:
	}
	if s := (&client{f: f, token: "alice-rw", session: c.session}).sessionObj(); s == nil || !s.outbox.HasStream() {
		t.Fatal("the session's stream is gone")
	}
}
