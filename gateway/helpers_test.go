package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/worker"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/metrics"
	"github.com/gemgate/gemgate/gateway/trace"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
)

// testLauncher starts the test binary as a worker in the given mode, through the real
// worker.CommandLauncher so that the worker's environment is built the way the binary builds it.
type testLauncher struct {
	mode    string
	dataDir string
}

func (l *testLauncher) Launch(ctx context.Context, id worker.Identity) (worker.Launch, error) {
	exe, err := os.Executable()
	if err != nil {
		return worker.Launch{}, err
	}
	cl := &worker.CommandLauncher{Command: []string{exe}, DataDir: l.dataDir,
		Env: []string{"GEMGATE_TEST_WORKER=" + l.mode, "GORACE=atexit_sleep_ms=0"}, StopGrace: time.Second}
	return cl.Launch(ctx, id)
}

const testIssuer = "https://issuer.test"

// testTokens is a verifier over a fixed token table; any other token is invalid.
type testTokens map[string]auth.Principal

func (tt testTokens) Verify(_ context.Context, raw string) (auth.Principal, error) {
	p, ok := tt[raw]
	if !ok {
		return auth.Principal{}, fmt.Errorf("%w: unknown test token", auth.ErrInvalidToken)
	}
	p.Scopes = slices.Clone(p.Scopes)
	if p.Expiry.IsZero() {
		// As a JWT's exp: every token gemgate is given has one, and a stream arms a timer for
		// it (sessions.StreamEnd), which the idle stack and memory measures must include.
		p.Expiry = time.Now().Add(time.Hour)
	}
	return p, nil
}

var tokens = testTokens{
	"alice-rw": {Issuer: testIssuer, Subject: "sub-alice", User: "alice", Scopes: []string{"mcp:use", "mcp:write"}},
	"alice-ro": {Issuer: testIssuer, Subject: "sub-alice", User: "alice", Scopes: []string{"mcp:use"}},
	"bob-rw":   {Issuer: testIssuer, Subject: "sub-bob", User: "bob", Scopes: []string{"mcp:use", "mcp:write"}},
	// Two more users, for measures that need more of what one user may hold.
	"carol-rw": {Issuer: testIssuer, Subject: "sub-carol", User: "carol", Scopes: []string{"mcp:use", "mcp:write"}},
	"dave-rw":  {Issuer: testIssuer, Subject: "sub-dave", User: "dave", Scopes: []string{"mcp:use", "mcp:write"}},
}

const resourceMetadata = "https://gw.test/.well-known/oauth-protected-resource/mcp"

// logBuffer collects log output from many goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// records are the JSON log lines, decoded.
func (b *logBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not one JSON object: %v: %q", err, line)
		}
		out = append(out, m)
	}
	return out
}

// fixture is a gateway served by httptest with the demo worker, the real authenticator over
// testTokens, a fresh metrics registry and the trace on, all logging into one buffer.
type fixture struct {
	t       *testing.T
	gw      *Gateway
	srv     *httptest.Server
	url     string
	log     *logBuffer
	reg     *prometheus.Registry
	metrics *metrics.Metrics
}

var demoReadOnlyTools = []string{"whoami", "list_notes", "read_note", "search_notes", "slow", "echo"}

func newFixture(t *testing.T, mods ...func(*Options)) *fixture {
	t.Helper()
	pol, err := policy.New(policy.Config{ReadOnlyTools: demoReadOnlyTools})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, log: &logBuffer{}, reg: prometheus.NewRegistry()}
	f.metrics = metrics.New(f.reg)
	logger := slog.New(slog.NewJSONHandler(f.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	authn := auth.NewAuthenticator(auth.AuthenticatorOptions{
		Verifier: tokens, ResourceMetadataURL: resourceMetadata, RequiredScopes: pol.RequiredScopes(),
	})
	o := Options{
		Authenticate:      authn.Middleware,
		InsufficientScope: authn.InsufficientScope,
		Policy:            pol,
		Workers:           &testLauncher{mode: "demo", dataDir: t.TempDir()},
		Logger:            logger,
		Metrics:           f.metrics,
		Trace:             &trace.Tracer{Logger: logger},
		InitTimeout:       10 * time.Second,
		// Most tests here pin rules of one session and its worker; the per-user tests say so.
		Pool: pool.Settings{WorkerPer: pool.PerSession},
	}
	for _, mod := range mods {
		mod(&o)
	}
	f.gw, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(f.gw.Handler())
	f.url = f.srv.URL + "/mcp"
	t.Cleanup(func() {
		f.gw.BeginShutdown()
		f.gw.Close()
		f.srv.Close()
	})
	return f
}

// rpcError decodes a message's error object.
func rpcError(t *testing.T, m *jsonrpc.Message) jsonrpc.RPCError {
	t.Helper()
	if m.Error == nil {
		t.Fatalf("want a JSON-RPC error, got result %s", m.Result)
	}
	var e jsonrpc.RPCError
	if err := json.Unmarshal(m.Error, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// toolText is the text of a tools/call result's first content item.
func toolText(t *testing.T, m *jsonrpc.Message) string {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("tools/call failed: %s", m.Error)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("tools/call result without content: %s", m.Result)
	}
	return res.Content[0].Text
}

// session is the gateway's session for c, or nil.
func (c *client) sessionObj() *session {
	p, _ := tokens.Verify(context.Background(), c.token)
	return c.f.gw.sessions.Lookup(c.session, ownerOf(p))
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// workerPids lists the live processes this test binary started as workers in mode.
func workerPids(t *testing.T, mode string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	me := strconv.Itoa(os.Getpid())
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil || !strings.Contains(string(status), "\nPPid:\t"+me+"\n") {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if slices.Contains(strings.Split(string(env), "\x00"), "GEMGATE_TEST_WORKER="+mode) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive reports whether a process with this pid exists (a reaped worker leaves no entry).
func alive(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

func containsStr(s, sub string) bool { return strings.Contains(s, sub) }

// metricValue reads one series from the fixture's registry: a counter's or gauge's value, a
// histogram's sample count; 0 when the series does not exist. labels are name, value pairs
// and must match the series' labels exactly. (prometheus/testutil would do, but it needs a
// module go.mod does not carry.)
func metricValue(t *testing.T, f *fixture, name string, labels ...string) float64 {
	t.Helper()
	return gathered(t, f.reg, name, labels...)
}

// gathered is metricValue of the metrics registered with reg.
func gathered(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel())*2 != len(labels) {
				continue
			}
			for i, lp := range m.GetLabel() {
				if lp.GetName() != labels[2*i] || lp.GetValue() != labels[2*i+1] {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

// workersRunning is gemgate_workers_running, over both access modes.
func workersRunning(t *testing.T, f *fixture) int {
	t.Helper()
	n := 0.0
	for _, mode := range []string{"read_only", "read_write"} {
		n += metricValue(t, f, "gemgate_workers_running", "mode", mode)
	}
	return int(n)
}

// waitMetric waits up to 2s for a series to reach want, for counts made after the fact.
func waitMetric(t *testing.T, f *fixture, want float64, name string, labels ...string) float64 {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		got := metricValue(t, f, name, labels...)
		if got == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// inCall reports whether s has a call in flight, as the reaper reads it.
func (s *session) inCall() bool { return s.state(time.Now()).Busy }
