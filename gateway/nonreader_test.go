package gateway

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A client that never reads its answer, JSON or SSE, holds the request's handler (its
// goroutine, the answer's bytes, the request and its context with the verified token) for
// sseWriteTimeout at most, not for as long as it keeps the connection open. The answer is
// larger than the socket buffers, so the write blocks.
func TestAnswerToANonReaderEnds(t *testing.T) {
	forEachAnswerForm(t, nonReader)
}

func nonReader(t *testing.T, accept string) {
	f := newFixture(t, func(o *Options) { o.MaxBodyBytes = 32 << 20 })
	c := f.client("alice-rw")
	c.open()

	returned := make(chan struct{})
	probe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.gw.Handler().ServeHTTP(w, r)
		if r.Header.Get("X-Probe") == "1" {
			close(returned)
		}
	}))
	defer probe.Close()

	text := strings.Repeat("x", 6<<20)
	body := rpcBody("7", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": text}})
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", probe.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer alice-rw\r\nMcp-Session-Id: %s\r\n"+
		"Mcp-Protocol-Version: 2025-06-18\r\nContent-Type: application/json\r\nAccept: %s\r\nX-Probe: 1\r\n"+
		"Content-Length: %d\r\n\r\n%s", probe.Listener.Addr(), c.session, accept, len(body), body)
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	// The client now reads nothing and keeps the connection open.
	limit := sseWriteTimeout + 15*time.Second
	select {
	case <-returned:
		t.Logf("handler returned (Accept %q) %v after the request", accept, time.Since(sent))
	case <-time.After(limit):
		t.Fatalf("the handler is still blocked writing to a client that does not read, %v after the request", limit)
	}
}
