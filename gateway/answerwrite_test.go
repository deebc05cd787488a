package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
// the write timeout at most, not for as long as it keeps the connection open. The answer is
// larger than the socket buffers, so the write blocks. The gateway's write timeout is short
// here (testWriteTimeout): the test waits it out.
func TestAnswerToANonReaderEnds(t *testing.T) {
	forEachAnswerForm(t, nonReader)
}

func nonReader(t *testing.T, accept string) {
	f := newFixture(t, func(o *Options) { o.MaxBodyBytes, o.writeTimeout = 32<<20, testWriteTimeout })
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
	// The client now reads nothing and keeps the connection open. The limit counts from the
	// request, so it holds the 6 MiB echo's way through the worker too, which takes seconds
	// under the race detector on a loaded machine; a handler that never returns fails either way.
	limit := testWriteTimeout + 60*time.Second
	select {
	case <-returned:
		t.Logf("handler returned (Accept %q) %v after the request", accept, time.Since(sent))
	case <-time.After(limit):
		t.Fatalf("the handler is still blocked writing to a client that does not read, %v after the request", limit)
	}
}

// A client on a slow link that reads a large answer steadily (64 KiB every tenth of the write
// timeout) is not a client that does not read: it gets the whole answer, JSON or SSE, though
// it takes longer than the write timeout to arrive (wire.WriteFlushed bounds each chunk, not the
// whole). The gateway's write timeout is short here (testWriteTimeout), and the link's speed
// scaled to it: with the default 5 s, the reader would take 7 s an answer.
func TestSlowReaderGetsALargeAnswer(t *testing.T) {
	forEachAnswerForm(t, slowReader)
}

func slowReader(t *testing.T, accept string) {
	f, hc := newSlowLink(t, func(o *Options) { o.writeTimeout = testWriteTimeout })
	c := f.client("alice-rw")
	c.open()
	text := strings.Repeat("x", 896<<10)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": "echo", "arguments": map[string]any{"text": text}}})
	req, err := c.newRequest(context.Background(), http.MethodPost, strings.NewReader(string(body)), "Accept", accept)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := 0
	buf := make([]byte, 64<<10)
	var rerr error
	for {
		n, err := io.ReadFull(resp.Body, buf)
		got += n
		if err != nil {
			if err != io.EOF && err != io.ErrUnexpectedEOF {
				rerr = err
			} else if err == io.ErrUnexpectedEOF && int64(got) != resp.ContentLength {
				rerr = err
			}
			break
		}
		time.Sleep(testWriteTimeout / 10)
	}
	if took := time.Since(start); took <= testWriteTimeout {
		t.Fatalf("the answer came in %v, within one write timeout (%v): the reader was not slow", took, testWriteTimeout)
	}
	if int64(got) != resp.ContentLength {
		t.Fatalf("a steady 128 KiB/s reader got %d of the answer's %d bytes (%v)", got, resp.ContentLength, rerr)
	}
	if got < len(text) {
		t.Fatalf("the answer is %d bytes, shorter than the text echoed", got)
	}
}

// forEachAnswerForm runs test with the Accept header of a client that takes only JSON, and of
// one that takes SSE too: the two forms an answer is written in.
func forEachAnswerForm(t *testing.T, test func(t *testing.T, accept string)) {
	for _, accept := range []string{"application/json", "application/json, text/event-stream"} {
		t.Run(accept, func(t *testing.T) { test(t, accept) })
	}
}

// newSlowLink is a fixture whose gateway serves on connections with small send buffers, as a
// loaded host's are (loopback's autotuned buffers would otherwise take a whole long answer),
// and a client whose connections have small receive buffers: what it does not read stays
// in the gateway's writes.
func newSlowLink(t *testing.T, mods ...func(*Options)) (*fixture, *http.Client) {
	f := newFixture(t, mods...)
	srv := httptest.NewUnstartedServer(f.gw.Handler())
	srv.Listener = smallSendBuf{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	f.url = srv.URL + "/mcp"
	d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8<<10) })
	}}
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableCompression: true}}
	t.Cleanup(hc.CloseIdleConnections)
	return f, hc
}

// testWriteTimeout is the write timeout of the tests that wait it out, or that pace a
// reader by it.
const testWriteTimeout = 500 * time.Millisecond

type smallSendBuf struct{ net.Listener }

func (l smallSendBuf) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}
