package gateway

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// A client's Mcp-Session-Id reaches a log line only as X-Request-Id would: up to 128 bytes of
// visible ASCII. A longer one (here 200 KiB, on a request whose body cannot be read, which is
// logged before any session is looked up) is logged as its length.
func TestSessionHeaderIsLoggedOnlyIfPlausible(t *testing.T) {
	f := newFixture(t)
	junk := strings.Repeat("A", 200<<10)
	conn, err := net.Dial("tcp", f.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := "POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer alice-rw\r\nMcp-Session-Id: " + junk +
		"\r\nContent-Type: application/json\r\nAccept: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.ReadAll(conn)
	eventually(t, 5*time.Second, "the failed request's log line", func() bool { return strings.Contains(f.log.String(), "request failed") })
	for _, rec := range f.log.records(t) {
		if rec["msg"] != "request failed" {
			continue
		}
		if got := rec["session"]; got != "(invalid, 204800 bytes)" {
			t.Fatalf("the failed request's line names the session %.60q (%d bytes)", got, len(got.(string)))
		}
	}
}
