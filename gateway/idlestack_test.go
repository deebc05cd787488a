//go:build !race

// The race detector's instrumentation makes every frame larger, so what this file pins holds
// only in a build without it; .ci/test runs it in such a build (step "idle stream stack").

package gateway

import (
	"bufio"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/internal/stacktest"
	"github.com/gemgate/gemgate/pool"
)

// idleStreamOpener returns a function that opens a session over a raw connection, sends
// notifications/initialized and opens the session's GET stream on the same connection, as
// clients do, and returns once the stream's priming event has come: its handler is about to
// wait. Raw connections read from the test's goroutine, so that no client goroutine is
// counted.
func idleStreamOpener(t *testing.T) func() net.Conn {
	f := newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.Trace = nil // as gemgate runs unless --trace-wire is asked for
		o.Limits.MaxSessionsPerUser, o.Limits.WorkerStartRate = NoLimit, NoLimit
	})
	addr := strings.TrimPrefix(f.srv.URL, "http://")
	return func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		br := bufio.NewReader(c)
		send := func(method, session, body string) *http.Response {
			req := method + " /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer alice-rw\r\n" +
				"Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-06-18\r\n"
			if session != "" {
				req += "Mcp-Session-Id: " + session + "\r\n"
			}
			if body != "" {
				req += "Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n"
			}
			if _, err := c.Write([]byte(req + "\r\n" + body)); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		resp := send(http.MethodPost, "", rpcBody("1", "initialize", initParams("2025-06-18")))
		session := resp.Header.Get(headerSessionID)
		drain(t, resp)
		if resp.StatusCode != http.StatusOK || session == "" {
			t.Fatalf("initialize: %d, session %q", resp.StatusCode, session)
		}
		resp = send(http.MethodPost, session, rpcBody("", "notifications/initialized", map[string]any{}))
		drain(t, resp)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("notifications/initialized: %d", resp.StatusCode)
		}
		resp = send(http.MethodGet, session, "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET: %d", resp.StatusCode)
		}
		// The priming event: the stream is open and its handler is about to wait.
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "id:") {
			t.Fatalf("GET stream's first line %q, %v", line, err)
		}
		return c
	}
}

// TestIdleStreamStackIsHalved: an idle GET stream's goroutine whose stack grew to 16 KiB (by
// the requests its connection served before, as a tools/call does) is halved by the runtime
// while it waits. The runtime halves a stack only when less than a quarter of it is in use
// (with a margin), so this fails when the frames under the stream's wait (net/http, the
// middleware, the handler) grow past about 3.2 KiB. Measured with raw connections
// (idleStreamOpener).
func TestIdleStreamStackIsHalved(t *testing.T) {
	const streams = 64
	open := idleStreamOpener(t)
	open() // the worker, and everything made once, before the measure
	stacks := func() int64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC() // a stack is halved when the collector scans it
		runtime.ReadMemStats(&m)
		return int64(m.StackInuse)
	}
	before := stacks()
	for range streams {
		open()
	}
	// Signed: goroutines an earlier test left behind may end in between, and make the
	// difference smaller (never larger: no other test runs beside this one).
	per := float64(stacks()-before) / streams
	t.Logf("goroutine stacks per idle GET stream: %.0f B", per)
	// Halved: the handler's 8 KiB and its connection's background reader. Not halved: 16 KiB
	// and more.
	if per > 14<<10 {
		t.Errorf("an idle GET stream holds %.0f B of goroutine stacks; want at most 14 KiB (its handler's stack halved to 8 KiB)", per)
	}
}

// TestIdleStreamStackNeverDoubles: opening a session and its stream on one connection never
// grows that connection's goroutine past the 8 KiB its stream's wait keeps, so an idle session
// holds no doubled stack even before a garbage collection could halve it (an idle gateway
// collects rarely). The deep work (initialize, the stream's first flush) runs aside. Measured
// with collection off, so nothing is halved: each stream then holds its handler's stack and
// its connection's background reader, which starts at the runtime's starting size.
func TestIdleStreamStackNeverDoubles(t *testing.T) {
	const streams = 64
	open := idleStreamOpener(t)
	open() // the worker, and everything made once, before the measure
	per, startSize := stacktest.PerCall(streams, func() { open() })
	// 8 KiB for the handler (or the starting size, if the runtime starts goroutines with
	// more), startSize for the reader, and 1 KiB of slack (see stacktest.PerCall).
	limit := float64(max(8<<10, startSize) + startSize + 1<<10)
	t.Logf("goroutine stacks per GET stream, nothing halved: %.0f B (starting size %d B)", per, startSize)
	if per > limit {
		t.Errorf("a GET stream holds %.0f B of goroutine stacks before any collection; want at most %.0f "+
			"(its handler's 8 KiB and a reader's %d B): opening the session or its stream grew the "+
			"connection's goroutine", per, limit, startSize)
	}
}

func drain(t *testing.T, resp *http.Response) {
	t.Helper()
	buf := make([]byte, 4096)
	for {
		if _, err := resp.Body.Read(buf); err != nil {
			break
		}
	}
	resp.Body.Close()
}
