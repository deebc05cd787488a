package gatewaybench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/auth/devissuer"
	"github.com/gemgate/gemgate/gateway"
	"github.com/gemgate/gemgate/gateway/limit"
	"github.com/gemgate/gemgate/gateway/metrics"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/worker/demo"
)

// The test binary doubles as the worker: started with this variable set, it serves the demo
// MCP server on stdio instead of running tests.
const workerEnv = "GEMGATE_BENCH_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "demo" {
		if err := demo.Run(context.Background(), demo.OptionsFromEnv(), os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fixture is a gateway behind a loopback server, with the auth gemgate dev has.
type fixture struct {
	url, token string
	gw         *gateway.Gateway
}

func newFixture(tb testing.TB, authOn bool, mods ...func(*gateway.Options)) *fixture {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	pol, err := policy.New(policy.Config{ReadOnlyTools: demo.ReadOnlyTools})
	if err != nil {
		tb.Fatal(err)
	}
	opts := gateway.Options{
		PublicURL:            url,
		Policy:               pol,
		Workers:              benchLauncher(exe, tb.TempDir()),
		AllowLoopbackOrigins: true,
		// gemgate serve logs at info: every tools/call writes an audit line.
		Logger:  slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Metrics: metrics.New(prometheus.NewRegistry()),
		// As bench/run.sh runs gemgate: every loadgen session is alice's, opened at once.
		Limits: limit.Settings{MaxSessions: -1, MaxSessionsPerUser: -1, WorkerStartRate: -1},
		Pool:   pool.Settings{WorkerPer: benchWorkerPer()},
	}
	f := &fixture{url: url}
	if authOn {
		iss, err := devissuer.Start(devissuer.Options{Audience: url})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { iss.Close() })
		v, err := auth.NewVerifier(context.Background(), auth.Config{Issuer: iss.URL(), Audiences: []string{url}})
		if err != nil {
			tb.Fatal(err)
		}
		a := auth.NewAuthenticator(auth.AuthenticatorOptions{Verifier: v, ResourceMetadataURL: auth.MetadataURL(url), RequiredScopes: pol.RequiredScopes()})
		opts.Authenticate, opts.InsufficientScope = a.Middleware, a.InsufficientScope
		if f.token, err = iss.Mint("alice", []string{"mcp:use", "mcp:write"}, time.Hour); err != nil {
			tb.Fatal(err)
		}
	} else {
		opts.Authenticate = auth.Anonymous(auth.Principal{Issuer: "local", Subject: "bench", User: "bench", Scopes: pol.ScopesSupported()})
	}
	for _, mod := range mods {
		mod(&opts)
	}
	if f.gw, err = gateway.New(opts); err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(f.gw.Handler())
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	tb.Cleanup(func() {
		f.gw.BeginShutdown()
		srv.Close()
		f.gw.Close()
	})
	return f
}

// client is one MCP session on a keep-alive connection of its own.
type client struct {
	f      *fixture
	hc     *http.Client
	id     string
	nextID int
}

func (f *fixture) open(tb testing.TB) *client {
	c := &client{f: f, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2, DisableCompression: true}}}
	_, h := c.post(tb, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	c.id = h.Get("Mcp-Session-Id")
	if c.id == "" {
		tb.Fatal("initialize: no session id")
	}
	c.send(tb, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, http.StatusAccepted)
	return c
}

func (c *client) req(method string, body []byte) *http.Request {
	r, _ := http.NewRequest(method, c.f.url, bytes.NewReader(body))
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Content-Type", "application/json")
	if c.f.token != "" {
		r.Header.Set("Authorization", "Bearer "+c.f.token)
	}
	if c.id != "" {
		r.Header.Set("Mcp-Session-Id", c.id)
		r.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	return r
}

func (c *client) send(tb testing.TB, body string, want int) []byte {
	resp, err := c.hc.Do(c.req(http.MethodPost, []byte(body)))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		tb.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, want, b)
	}
	return b
}

func (c *client) post(tb testing.TB, method, params string) ([]byte, http.Header) {
	c.nextID++
	body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(c.nextID) + `,"method":"` + method + `","params":` + params + `}`
	resp, err := c.hc.Do(c.req(http.MethodPost, []byte(body)))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"result"`)) {
		tb.Fatalf("%s: HTTP %d: %s", method, resp.StatusCode, b)
	}
	return b, resp.Header
}

func (c *client) echo(tb testing.TB, params string, payload int) {
	b, _ := c.post(tb, "tools/call", params)
	if len(b) < payload {
		tb.Fatalf("echo answer of %d bytes for a %d-byte payload", len(b), payload)
	}
}

func echoParams(payload int) string {
	p, _ := json.Marshal(map[string]any{"name": "echo", "arguments": map[string]any{"text": strings.Repeat("x", payload)}})
	return string(p)
}

// BenchmarkGatewayEcho is tools/call echo through the in-process gateway from N concurrent
// sessions; one b.N op is one call. Profile it at the highest concurrency:
//
//	go test ./bench/gatewaybench -run '^$' -bench 'GatewayEcho/auth=on/sessions=32' -cpuprofile cpu.out
func BenchmarkGatewayEcho(b *testing.B) {
	for _, authOn := range []bool{true, false} {
		for _, n := range []int{1, 32} {
			b.Run(fmt.Sprintf("auth=%s/sessions=%d", onOff(authOn), n), func(b *testing.B) {
				echoFrom(b, newFixture(b, authOn), n)
			})
		}
	}
}

// echoFrom makes b.N tools/call echo calls of 100 bytes from n concurrent sessions of f.
func echoFrom(b *testing.B, f *fixture, n int) {
	params := echoParams(100)
	clients := make([]*client, n)
	for i := range clients {
		clients[i] = f.open(b)
		for range 20 {
			clients[i].echo(b, params, 100)
		}
	}
	var next sync.Mutex
	left := 0
	b.ReportAllocs()
	b.ResetTimer()
	left = b.N
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				if left == 0 {
					next.Unlock()
					return
				}
				left--
				next.Unlock()
				c.echo(b, params, 100)
			}
		}()
	}
	wg.Wait()
}

func onOff(v bool) string {
	if v {
		return "on"
	}
	return "off"
}

// TestIdleSessionHeap opens sessions that each hold a GET stream and reports the gateway's
// heap per session (heap in use after GC, client and worker-side buffers included). With
// -memprofile on a benchmark run the allocation sites show; run it with
// GEMGATE_BENCH_IDLE=200 to get the figure.
func TestIdleSessionHeap(t *testing.T) {
	k, _ := strconv.Atoi(os.Getenv("GEMGATE_BENCH_IDLE"))
	if k <= 0 {
		t.Skip("set GEMGATE_BENCH_IDLE=K to open K idle sessions")
	}
	if os.Getenv("GEMGATE_BENCH_HEAPPROFILE") != "" {
		runtime.MemProfileRate = 1 // every allocation: an idle session's few kilobytes show
	}
	f := newFixture(t, true)
	w := f.open(t)
	w.stream(t)
	before, stacksBefore := heapInUse(), stackInUse()
	for range k {
		f.open(t).stream(t)
	}
	after, stacksAfter := heapInUse(), stackInUse()
	t.Logf("%d idle sessions with GET streams: heap in use %+d KiB, %.1f KiB per session (client side included), of which stacks %.1f KiB",
		k, (after-before)>>10, float64(after-before)/1024/float64(k), float64(stacksAfter-stacksBefore)/1024/float64(k))
	if prof := os.Getenv("GEMGATE_BENCH_HEAPPROFILE"); prof != "" {
		writeHeapProfile(t, prof)
	}
	logGoroutines(t, k)
}

func (c *client) stream(tb testing.TB) {
	r := c.req(http.MethodGet, nil)
	r.Header.Set("Accept", "text/event-stream")
	resp, err := c.hc.Do(r)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET stream: %v %v", err, resp)
	}
	tb.Cleanup(func() { resp.Body.Close() })
	c.hc.Transport.(*http.Transport).CloseIdleConnections()
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// benchWorkerPer is GEMGATE_BENCH_WORKER_PER: "session" (the default here, as the
// side-by-side table's (c)) or "user" (every session shares alice's one worker, as (g)).
func benchWorkerPer() string {
	if v := os.Getenv("GEMGATE_BENCH_WORKER_PER"); v != "" {
		return v
	}
	return pool.PerSession
}
