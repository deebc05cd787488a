//go:build !race

// The race detector's instrumentation makes every frame larger, so what this file pins holds
// only in a build without it; .ci/test runs it in such a build (step "idle stream stack").

package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/limit"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/internal/stacktest"
	"github.com/gemgate/gemgate/pool"
)

// rawConn is a raw connection to the fixture, with a bearer token of testTokens. Raw
// connections read from the test's goroutine, so that no client goroutine is counted in a
// stack measure.
type rawConn struct {
	t     *testing.T
	addr  string
	token string
	c     net.Conn
	br    *bufio.Reader
}

// dialRaw is dialRawAs for alice-rw.
func dialRaw(t *testing.T, f *fixture) *rawConn { return dialRawAs(t, f, "alice-rw") }

func dialRawAs(t *testing.T, f *fixture, token string) *rawConn {
	addr := strings.TrimPrefix(f.srv.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, addr: addr, token: token, c: c, br: bufio.NewReader(c)}
}

// write sends one request: with the session's id unless it is "", and the headers in extra,
// name and value; Mcp-Protocol-Version is 2025-06-18 unless extra names it.
func (rc *rawConn) write(method, session, body string, extra ...string) {
	req := method + " /mcp HTTP/1.1\r\nHost: " + rc.addr + "\r\nAuthorization: Bearer " + rc.token + "\r\n" +
		"Accept: application/json, text/event-stream\r\n"
	if !slices.Contains(extra, sessionless.HeaderProtocolVersion) {
		extra = append(extra, sessionless.HeaderProtocolVersion, "2025-06-18")
	}
	if session != "" {
		extra = append(extra, headerSessionID, session)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		req += extra[i] + ": " + extra[i+1] + "\r\n"
	}
	if body != "" {
		req += "Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n"
	}
	if _, err := rc.c.Write([]byte(req + "\r\n" + body)); err != nil {
		rc.t.Fatal(err)
	}
}

// read reads the next response's head.
func (rc *rawConn) read() *http.Response {
	_ = rc.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		rc.t.Fatal(err)
	}
	return resp
}

// send writes one request and reads its response's head.
func (rc *rawConn) send(method, session, body string, extra ...string) *http.Response {
	rc.write(method, session, body, extra...)
	return rc.read()
}

// rawSession opens a session over send (rawConn) as clients do, initialize then
// notifications/initialized, and returns its id.
func rawSession(t *testing.T, rc *rawConn) string {
	resp := rc.send(http.MethodPost, "", rpcBody("1", "initialize", initParams("2025-11-25")))
	session := resp.Header.Get(headerSessionID)
	drain(t, resp)
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, session)
	}
	resp = rc.send(http.MethodPost, session, rpcBody("", "notifications/initialized", map[string]any{}))
	drain(t, resp)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d", resp.StatusCode)
	}
	return session
}

// firstEventID reads a stream's first line, which must be its priming event's id, and
// returns the id.
func firstEventID(t *testing.T, resp *http.Response) string {
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	id, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "id: ")
	if err != nil || !ok {
		t.Fatalf("stream's first line %q, %v", line, err)
	}
	return id
}

// idleStreamFixture is the gateway the stack measures run: a worker per user, no trace, as
// gemgate runs unless --trace-wire is asked for, and no per-user limits.
func idleStreamFixture(t *testing.T) *fixture {
	return newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.Trace = nil
		o.Limits.MaxSessionsPerUser, o.Limits.WorkerStartRate = limit.None, limit.None
	})
}

// idleStreamOpener returns a function that opens a session over a raw connection, sends
// notifications/initialized and opens the session's GET stream on the same connection, as
// clients do, and returns once the stream's priming event has come: its handler is about to
// wait.
func idleStreamOpener(t *testing.T) func() {
	f := idleStreamFixture(t)
	return func() {
		rc := dialRaw(t, f)
		resp := rc.send(http.MethodGet, rawSession(t, rc), "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET: %d", resp.StatusCode)
		}
		firstEventID(t, resp) // the priming event: the stream is open and its handler is about to wait
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
	per, startSize := stacktest.PerCall(streams, open)
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

// TestIdleResumedStreamStackNeverDoubles is TestIdleStreamStackNeverDoubles for a GET that
// resumes a POST's answer stream (Last-Event-ID): a call cut after its priming event and
// resumed waits for its answer, as long as the call runs, under a stack its opening did not
// grow. The calls (slow, with progress) are started and cut before the measure, each on a
// connection of its own, over two sessions (a session keeps resumeStreams streams); their
// handlers wait for them, and are not measured. Each measured step resumes one, on a
// connection of its own.
func TestIdleResumedStreamStackNeverDoubles(t *testing.T) {
	const streams = 48 // and one before the measure: within max_calls_per_worker's 64
	f := idleStreamFixture(t)
	type cut struct {
		ctl     *rawConn
		session string
		last    string
	}
	calls := make([]cut, streams+1)
	for n := range calls {
		if n < 2 {
			calls[n].ctl = dialRaw(t, f)
			calls[n].session = rawSession(t, calls[n].ctl)
		} else {
			calls[n].ctl, calls[n].session = calls[n%2].ctl, calls[n%2].session
		}
	}
	// Started together: each stream starts with its call's first progress, a second in.
	posts := make([]*rawConn, len(calls))
	for n, c := range calls {
		posts[n] = dialRaw(t, f)
		posts[n].write(http.MethodPost, c.session, rpcBody(`"r-`+strconv.Itoa(n)+`"`, "tools/call", slowParams(60, true, n)))
	}
	t.Cleanup(func() { // the calls end, and their streams with them
		for n, c := range calls {
			drain(t, c.ctl.send(http.MethodPost, c.session, rpcBody("", "notifications/cancelled", map[string]any{"requestId": "r-" + strconv.Itoa(n)})))
		}
	})
	for n, post := range posts {
		resp := post.read()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("tools/call: %d %s", resp.StatusCode, b)
		}
		calls[n].last = firstEventID(t, resp)
		post.c.Close() // the connection goes mid-call; the call goes on
	}
	next := 0
	resume := func() {
		c := calls[next]
		next++
		resp := dialRaw(t, f).send(http.MethodGet, c.session, "", "Last-Event-ID", c.last)
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("resume after %s: %d %s", c.last, resp.StatusCode, b)
		}
		if id := firstEventID(t, resp); id == "" {
			t.Fatal("the resumed stream's priming event has no id")
		}
	}
	resume() // everything made once, before the measure
	per, startSize := stacktest.PerCall(streams, resume)
	limit := float64(max(8<<10, startSize) + startSize + 1<<10)
	t.Logf("goroutine stacks per resumed stream, nothing halved: %.0f B (starting size %d B)", per, startSize)
	if per > limit {
		t.Errorf("a resumed POST stream holds %.0f B of goroutine stacks before any collection; want at most %.0f "+
			"(its handler's 8 KiB and a reader's %d B): opening it grew the connection's goroutine", per, limit, startSize)
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
