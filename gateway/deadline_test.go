package gateway

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stalledPOST sends a POST whose body promises 1,000 bytes and delivers a few, then waits
// for the server to close the connection. It returns what the server answered and when it
// closed; it fails the test if the connection is still open after within.
func stalledPOST(t *testing.T, mcpURL, token string, within time.Duration) (status string, took time.Duration) {
	t.Helper()
	u, _ := url.Parse(mcpURL)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	req := "POST " + u.Path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n"
	if token != "" {
		req += "Authorization: Bearer " + token + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"+`{"jsonrpc":"2.0",`); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(start.Add(within))
	got, err := io.ReadAll(c)
	took = time.Since(start)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v; server sent %q", took, got)
	}
	status, _, _ = strings.Cut(string(got), "\r\n")
	if !strings.Contains(string(got), "Connection: close") {
		t.Errorf("the answer does not say Connection: close: %q", got)
	}
	return status, took
}

// TestStalledBodyClosesTheConnection: a request whose body stops arriving holds its
// connection no longer than the read timeout, and a refused one not at all; what has arrived
// whole (a call answered after the timeout, a GET stream) is not cut. Both with the
// gateway's own deadline and with the http.Server's ReadTimeout, whose background read
// would cancel a request that outlives it.
func TestStalledBodyClosesTheConnection(t *testing.T) {
	const readTimeout = 400 * time.Millisecond
	for _, serverTimeout := range []bool{false, true} {
		name := "gateway deadline"
		if serverTimeout {
			name = "server ReadTimeout"
		}
		t.Run(name, func(t *testing.T) {
			// Without the trace: it reads a refused body for the log, with a deadline of its own.
			f := newFixture(t, func(o *Options) { o.ReadTimeout, o.Trace = readTimeout, nil })
			if serverTimeout {
				srv := httptest.NewUnstartedServer(f.gw.Handler())
				srv.Config.ReadTimeout = readTimeout
				srv.Start()
				t.Cleanup(srv.Close)
				f.url = srv.URL + "/mcp"
			}
			if status, took := stalledPOST(t, f.url, "", 5*time.Second); status != "HTTP/1.1 401 Unauthorized" || took > readTimeout {
				t.Errorf("no token: %q after %v, want 401 at once", status, took)
			}
			status, took := stalledPOST(t, f.url, "alice-rw", 5*time.Second)
			if took < readTimeout-50*time.Millisecond {
				t.Errorf("valid token: closed after %v, before the read timeout", took)
			}
			if status != "HTTP/1.1 408 Request Timeout" && status != "" {
				t.Errorf("valid token: answer %q, want 408 or none", status)
			}

			c := f.client("alice-rw")
			c.open()
			st := c.openStream()
			if m := c.callTool("2", "slow", map[string]any{"seconds": 1}).only(t); m.Error != nil {
				t.Errorf("a call answered after the read timeout: %s", m.Error)
			}
			if st.ended(200 * time.Millisecond) {
				t.Error("the GET stream ended at the read timeout")
			}
		})
	}
}

// TestBodyReadWithinTheTimeoutIsServed: a body that arrives slowly but whole within the
// timeout is served, and the connection is kept for the next request.
func TestBodyReadWithinTheTimeoutIsServed(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.ReadTimeout = 5 * time.Second })
	u, _ := url.Parse(f.url)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	body := rpcBody("1", "initialize", initParams("2025-06-18"))
	head := "POST " + u.Path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/json\r\n" +
		"Accept: application/json\r\nAuthorization: Bearer alice-rw\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	io.WriteString(c, head+body[:10])
	time.Sleep(100 * time.Millisecond) // the rest comes later, as from a slow client
	io.WriteString(c, body[10:])
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Errorf("slow but whole body: status %d, close %v", resp.StatusCode, resp.Close)
	}
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+u.Host+"\r\n\r\n")
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the connection was not kept: %v %v", resp, err)
	}
}
