package gateway

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// countingListener counts the writes made to every connection it accepted: each is one
// system call on the socket.
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, l: l}, nil
}

type countingConn struct {
	net.Conn
	l *countingListener
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.l.writes.Add(1)
	return c.Conn.Write(b)
}

// serveCounting serves f's gateway again behind a counting listener and points f's clients
// at it.
func serveCounting(t *testing.T, f *fixture) *countingListener {
	t.Helper()
	srv := httptest.NewUnstartedServer(f.gw.Handler())
	cl := &countingListener{Listener: srv.Listener}
	srv.Listener = cl
	srv.Start()
	t.Cleanup(srv.Close)
	f.url = srv.URL + "/mcp"
	return cl
}

// An answer the worker sends alone (nothing related before it) leaves in one write to the
// client's connection, as an SSE stream or as JSON: headers, the priming event and the answer
// event together. Each write is a system call and, at a few per call, they were most of the
// gateway's CPU per call.
func TestAnswerIsOneWrite(t *testing.T) {
	tests := []struct {
		name        string
		sessionless bool
		accept      string
		want        string // the answer's Content-Type
	}{
		{"legacy, SSE", false, "application/json, text/event-stream", "text/event-stream"},
		{"legacy, JSON", false, "application/json", "application/json"},
		{"sessionless, SSE", true, "application/json, text/event-stream", "text/event-stream"},
		{"sessionless, JSON", true, "application/json", "application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newSessionlessFixture(t)
			cl := serveCounting(t, f)
			c := f.client("alice-rw")
			if !tc.sessionless {
				c.open()
			}
			call := func() reply {
				params := map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}
				if tc.sessionless {
					return c.sessionless("7", "tools/call", params, "Accept", tc.accept)
				}
				return c.post(rpcBody("7", "tools/call", params), "Accept", tc.accept)
			}
			call() // the worker is started and the connection is open
			before := cl.writes.Load()
			r := call()
			got := cl.writes.Load() - before
			if r.status != http.StatusOK || !strings.HasPrefix(r.contentType(), tc.want) {
				t.Fatalf("status %d, Content-Type %q; want 200, %s", r.status, r.contentType(), tc.want)
			}
			if text := toolText(t, r.only(t)); !strings.Contains(text, "hi") {
				t.Fatalf("echo answered %q", text)
			}
			if got != 1 {
				t.Errorf("the answer took %d writes to the connection; want 1", got)
			}
		})
	}
}
