package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/worker"
)

// A worker that could not be had for an initialize, for a reason none of the pool's named
// errors gives (a start that panicked, as those waiting on it learn it), is a worker that
// could not be started: 503 with Retry-After, as before the eras shared callError; never the
// 200 of a call whose worker is gone, since no call was made.
func TestAttachFailureOfNoKnownKindIs503(t *testing.T) {
	f := newFixture(t)
	msg := &jsonrpc.Message{ID: []byte(`1`), Method: "initialize"}
	unnamed := errors.New("pool: the worker's start failed") // the pool's errStartPanicked
	var he *wire.Error
	if !errors.As(f.gw.attachError(httptest.NewRecorder(), msg, unnamed), &he) {
		t.Fatal("initialize: no refusal")
	}
	if he.Status != http.StatusServiceUnavailable || he.Header.Get("Retry-After") == "" {
		t.Errorf("initialize: %d %q (Retry-After %q), want 503 with Retry-After", he.Status, he.Message, he.Header.Get("Retry-After"))
	}
	if !errors.As(attachFailed(msg.ID, unnamed), &he) { // the adapter answers through Steps.AttachError
		t.Fatal("sessionless: no refusal")
	}
	if he.Status != http.StatusServiceUnavailable || he.Header.Get("Retry-After") == "" {
		t.Errorf("sessionless: %d %q (Retry-After %q), want 503 with Retry-After", he.Status, he.Message, he.Header.Get("Retry-After"))
	}
}

// failingRestarts refuses to prepare a worker while refusing is set; else it starts one.
type failingRestarts struct {
	testLauncher
	refusing atomic.Bool
}

func (l *failingRestarts) Launch(ctx context.Context, id worker.Identity) (worker.Launch, error) {
	if l.refusing.Load() {
		return worker.Launch{}, errors.New("the backend login is down")
	}
	return l.testLauncher.Launch(ctx, id)
}

// A session's call whose worker died and could not be started again never reached a worker:
// 503 with Retry-After and a JSON-RPC error with the call's id, in both eras alike. The
// session goes on: its next call is served once a worker starts.
func TestSessionCallWhoseRestartFailsIs503(t *testing.T) {
	l := &failingRestarts{testLauncher: testLauncher{mode: "demo", dataDir: t.TempDir()}}
	f := newFixture(t, func(o *Options) {
		o.Workers = l
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
	})
	c := f.client("alice-rw")
	c.open()
	pid := c.sessionObj().member.WorkerPid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the dead worker out of service", func() bool { return c.sessionObj().member.WorkerPid() == 0 })
	l.refusing.Store(true)
	r := c.callTool("30", "whoami", map[string]any{})
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("call whose restart failed: %d (Retry-After %q) %s, want 503 with Retry-After", r.status, r.header.Get("Retry-After"), r.body)
	}
	if m := r.only(t); m.Error == nil || string(m.ID) != "30" {
		t.Errorf("answer %s, want a JSON-RPC error with id 30", r.body)
	}
	l.refusing.Store(false)
	if again := c.callTool("31", "whoami", map[string]any{}); again.status != http.StatusOK || again.only(t).Error != nil {
		t.Errorf("the session's next call, on a worker started again: %d %s", again.status, again.body)
	}
}

// The go-sdk client on a session (2025-11-25) takes the 503 of a call whose worker could not
// be started again as that call's error (a transient status: its session is not broken), and
// its next call is served.
func TestGoSDKSessionOutlivesAFailedRestart(t *testing.T) {
	l := &failingRestarts{testLauncher: testLauncher{mode: "demo", dataDir: t.TempDir()}}
	f := newFixture(t, func(o *Options) {
		o.Workers = l
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hc := &http.Client{Transport: bearerRoundTripper("alice-rw")}
	cl := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.url, HTTPClient: hc, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	p, _ := tokens.Verify(ctx, "alice-rw")
	s := f.gw.sessions.Lookup(cs.ID(), ownerOf(p))
	if err := syscall.Kill(s.member.WorkerPid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the dead worker out of service", func() bool { return s.member.WorkerPid() == 0 })
	l.refusing.Store(true)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}}); err == nil {
		t.Fatal("the call whose worker could not be started succeeded")
	}
	l.refusing.Store(false)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("the next call of the go-sdk session: %v %+v", err, res)
	}
}

// bearerRoundTripper sends every request with the token as its bearer.
type bearerRoundTripper string

func (b bearerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// The worker mode numcursor (GEMGATE_TEST_WORKER=numcursor) is a legacy worker whose tool
// list binds whoami's region argument to the Mcp-Param-Region header and gives a number for
// nextCursor: a cursor that is no string.
func init() {
	if os.Getenv("GEMGATE_TEST_WORKER") == "numcursor" {
		os.Exit(playNumCursor())
	}
}

func playNumCursor() int {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		answer := `"result":{}`
		switch req.Method {
		case "server/discover":
			answer = `"error":{"code":-32601,"message":"method not found"}`
		case "initialize":
			answer = `"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"0"}}`
		case "tools/list":
			answer = `"result":{"tools":[{"name":"whoami","inputSchema":{"type":"object",` +
				`"properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}],"nextCursor":7}`
		case "tools/call":
			answer = `"result":{"content":[{"type":"text","text":"ran"}]}`
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,%s}`+"\n", req.ID, answer)
	}
	return 0
}

// A worker's tool list whose nextCursor is no string ends there, as encoding/json reads it,
// and the x-mcp-header bindings read so far are checked: a sessionless tools/call whose
// Mcp-Param-Region differs from its region argument is refused (400, -32020), not passed on
// unchecked past a proxy in front that reads the header.
func TestParamHeadersCheckedWhenTheCursorIsNoString(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Workers = &testLauncher{mode: "numcursor", dataDir: t.TempDir()}
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
	})
	c := f.client("alice-rw")
	r := c.sessionless("1", "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{"region": "eu"}},
		"Mcp-Param-Region", "us")
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "-32020") {
		t.Errorf("Mcp-Param-Region us for region eu: %d %s, want 400 -32020", r.status, r.body)
	}
}
