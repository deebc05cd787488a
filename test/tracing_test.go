package test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemgate/gemgate/worker/demo"
)

// The trace every test here continues: the client's traceparent carries this trace id and
// span id, as an MCP client continuing its own trace would send them in params._meta.
const (
	clientSpan = "00f067aa0ba902b7"
	// traceArgument is a tool argument no span may carry.
	traceArgument = "an argument that stays out of every span"
)

// jaegerBin is Jaeger v2's all-in-one binary (.ci/jaeger.sh builds it from its Go module):
// GEMGATE_JAEGER, else `jaeger` on PATH. Without one the test skips, or fails when
// GEMGATE_TEST_REQUIRE_JAEGER=1 says CI built it.
func jaegerBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GEMGATE_JAEGER"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("GEMGATE_JAEGER=%s: %v", p, err)
		}
		return p
	}
	return requireTool(t, "jaeger", "GEMGATE_TEST_REQUIRE_JAEGER")
}

// jaeger is one running Jaeger all-in-one, its traces in memory, every port on loopback.
type jaeger struct {
	otlpHTTP string // host:port of its OTLP/HTTP receiver
	query    string // base URL of its query API (and UI)
}

// startJaeger runs Jaeger with test/testdata/jaeger.yaml on free loopback ports and waits
// until its query API answers. It is stopped at cleanup.
func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := jaegerBin(t)
	j := &jaeger{otlpHTTP: freeAddr(t)}
	queryAddr := freeAddr(t)
	j.query = "http://" + queryAddr
	cmd := exec.Command(bin, "--config", "testdata/jaeger.yaml")
	cmd.Env = append(os.Environ(), "JAEGER_OTLP_HTTP="+j.otlpHTTP, "JAEGER_OTLP_GRPC="+freeAddr(t),
		"JAEGER_QUERY_HTTP="+queryAddr, "JAEGER_QUERY_GRPC="+freeAddr(t))
	logs := &logBuffer{}
	cmd.Stdout, cmd.Stderr = logWriter{logs}, logWriter{logs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var exitErr error
	exited := make(chan struct{}) // closed when jaeger has exited, exitErr set
	go func() { exitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	ready := poll(60*time.Second, func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		resp, err := http.Get(j.query + "/api/services")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	select {
	case <-exited:
		t.Fatalf("jaeger exited: %v\n%s", exitErr, logs)
	default:
	}
	if !ready {
		t.Fatalf("jaeger's query API did not answer within 60 s\n%s", logs)
	}
	return j
}

type logWriter struct{ b *logBuffer }

func (w logWriter) Write(p []byte) (int, error) {
	w.b.add(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// jspan is a span as Jaeger's query API (/api/traces/{id}) answers it, with its service.
type jspan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
	Service   string `json:"-"`
}

// tag is the span's tag key as text ("" when absent).
func (s jspan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

func (s jspan) hasTag(key string) bool {
	for _, t := range s.Tags {
		if t.Key == key {
			return true
		}
	}
	return false
}

// parent is the span id of the span's parent ("" for a root).
func (s jspan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

func (s jspan) String() string {
	return fmt.Sprintf("%s %q (span %s, parent %s, kind %s)", s.Service, s.OperationName, s.SpanID, s.parent(), s.tag("span.kind"))
}

// trace is what Jaeger holds of one trace now: nil when it holds nothing yet.
func (j *jaeger) trace(t *testing.T, traceID string) []jspan {
	t.Helper()
	resp, err := http.Get(j.query + "/api/traces/" + traceID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	var out struct {
		Data []struct {
			Spans     []jspan `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil {
		t.Fatalf("jaeger /api/traces/%s: %d %.300s", traceID, resp.StatusCode, b)
	}
	var spans []jspan
	for _, d := range out.Data {
		for _, s := range d.Spans {
			s.Service = d.Processes[s.ProcessID].ServiceName
			spans = append(spans, s)
		}
	}
	return spans
}

// waitSpans polls Jaeger until the trace holds a span for each of want (service and name),
// and returns the trace. Spans reach Jaeger in batches, so the test waits for them.
func (j *jaeger) waitSpans(t *testing.T, traceID string, want ...[2]string) []jspan {
	t.Helper()
	var spans []jspan
	complete := func() bool {
		spans = j.trace(t, traceID)
		for _, w := range want {
			if len(find(spans, w[0], w[1], "")) == 0 {
				return false
			}
		}
		return true
	}
	if !poll(30*time.Second, complete) {
		t.Fatalf("after 30 s, trace %s lacks some of %q; it holds:\n%s", traceID, want, spanList(spans))
	}
	return spans
}

// find is the spans of service named name, of kind kind ("" for any).
func find(spans []jspan, service, name, kind string) []jspan {
	var out []jspan
	for _, s := range spans {
		if s.Service == service && s.OperationName == name && (kind == "" || s.tag("span.kind") == kind) {
			out = append(out, s)
		}
	}
	return out
}

// one is the single span of service named name and of kind kind; it fails the test unless
// there is exactly one.
func one(t *testing.T, spans []jspan, service, name, kind string) jspan {
	t.Helper()
	f := find(spans, service, name, kind)
	if len(f) != 1 {
		t.Fatalf("%d %s spans %q of kind %q, want 1; the trace:\n%s", len(f), service, name, kind, spanList(spans))
	}
	return f[0]
}

func spanList(spans []jspan) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	return b.String()
}

// traceMeta is params._meta continuing the client's trace traceID.
func traceMeta(traceID string) mcp.Meta {
	return mcp.Meta{"traceparent": "00-" + traceID + "-" + clientSpan + "-01"}
}

// newTraceID is a fresh random trace id, as a client makes one.
func newTraceID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// The distributed trace of one tools/call, read back from a real Jaeger (built from its Go
// module by .ci/jaeger.sh): the client's traceparent in params._meta, gemgate's spans under
// it with the attributes docs/operations.md names, and the demo worker's own span under
// gemgate's worker round trip, in both eras.
func TestTracingIntoJaeger(t *testing.T) {
	t.Parallel()
	j := startJaeger(t)
	otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + j.otlpHTTP, "OTEL_BSP_SCHEDULE_DELAY=100"}

	// The demo worker on its own, as gemgate starts it (stdio, gemgate's environment with
	// OTEL_SERVICE_NAME=gemgate in it), driven by the Go SDK's client: its span is the child of
	// the traceparent in params._meta, under its own service name, and reaches Jaeger by the
	// time the worker has exited.
	t.Run("worker", func(t *testing.T) {
		traceID := newTraceID()
		cmd := exec.Command(workerBin, "worker", "demo")
		cmd.Env = append(os.Environ(), append(otel, "OTEL_SERVICE_NAME=gemgate", "GEMGATE_USER=alice", "GEMGATE_READ_ONLY=1")...)
		client := mcp.NewClient(&mcp.Implementation{Name: "gemgate-e2e-trace", Version: "1"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": traceArgument}, Meta: traceMeta(traceID)})
		if err != nil || res.IsError {
			t.Fatalf("echo: %v %v", err, res)
		}
		if err := cs.Close(); err != nil {
			t.Logf("closing the worker: %v", err)
		}
		spans := j.waitSpans(t, traceID, [2]string{demo.TraceServiceName, "tools/call echo"})
		s := one(t, spans, demo.TraceServiceName, "tools/call echo", "server")
		if s.parent() != clientSpan {
			t.Errorf("the worker's span has parent %q, want the client's span %s", s.parent(), clientSpan)
		}
		if s.tag("mcp.method.name") != "tools/call" || s.tag("gen_ai.tool.name") != "echo" {
			t.Errorf("the worker's span: %s", s.Tags)
		}
		noSecrets(t, spans)
	})

	g := startDevEnv(t, otel)
	token := g.Tokens["alice"]
	for _, era := range []struct{ name, version string }{{"2025", "2025-11-25"}, {"2026-07-28", "2026-07-28"}} {
		t.Run(era.name, func(t *testing.T) {
			var cs *mcp.ClientSession
			if era.name == "2025" {
				cs = connect(t, g.URL, token, nil)
			} else {
				cs = connectSessionless(t, g.URL, token, nil)
			}
			traceID := newTraceID()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": traceArgument}, Meta: traceMeta(traceID)})
			if err != nil || res.IsError {
				t.Fatalf("echo: %v %v", err, res)
			}
			spans := j.waitSpans(t, traceID, [2]string{"gemgate", "tools/call echo"}, [2]string{demo.TraceServiceName, "tools/call echo"})
			checkGemgateTrace(t, spans, era.name, era.version, token)
		})
	}
}

// checkGemgateTrace checks one tools/call's trace as the tracing contract says it
// (docs/operations.md, "Tracing").
func checkGemgateTrace(t *testing.T, spans []jspan, era, version, token string) {
	t.Helper()
	server := one(t, spans, "gemgate", "tools/call echo", "server")
	if server.parent() != clientSpan {
		t.Errorf("gemgate's server span has parent %q, want the client's span %s (params._meta.traceparent)", server.parent(), clientSpan)
	}
	for k, want := range map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		"mcp.protocol.version": version, "gemgate.era": era, "gemgate.outcome": "ok", "network.transport": "tcp",
	} {
		if got := server.tag(k); got != want {
			t.Errorf("gemgate's server span: %s = %q, want %q", k, got, want)
		}
	}
	if !server.hasTag("jsonrpc.request.id") {
		t.Error("gemgate's server span has no jsonrpc.request.id")
	}
	if era == "2025" && !server.hasTag("mcp.session.id") {
		t.Error("gemgate's server span of a 2025 session has no mcp.session.id")
	}
	if server.hasTag("error.type") || server.hasTag("rpc.response.status_code") {
		t.Errorf("a successful call's span carries an error: %s", server.Tags)
	}
	// The steps: the policy's decision and a token from the cache are the server span's
	// attributes; a full token check, a worker's start and a wait for a turn are its children.
	if server.tag("gemgate.decision") != "allow" || !server.hasTag("gemgate.decided_by") || !server.hasTag("gemgate.token.cached") {
		t.Errorf("gemgate's server span lacks the decision or the token's source: %s", server.Tags)
	}
	for name, tag := range map[string]string{
		"gemgate.verify_token": "gemgate.token.cached", "gemgate.worker.acquire": "gemgate.worker.started", "gemgate.worker.queue": "gemgate.worker.concurrency",
	} {
		for _, s := range find(spans, "gemgate", name, "") {
			if s.parent() != server.SpanID {
				t.Errorf("%s has parent %q, want gemgate's server span %s", name, s.parent(), server.SpanID)
			}
			if !s.hasTag(tag) {
				t.Errorf("%s has no %s: %v", name, tag, s.Tags)
			}
		}
	}
	if n := len(find(spans, "gemgate", "gemgate.policy", "")); n != 0 {
		t.Errorf("a call allowed at once has %d gemgate.policy spans", n)
	}
	client := one(t, spans, "gemgate", "tools/call echo", "client")
	if client.parent() != server.SpanID || client.tag("network.transport") != "pipe" {
		t.Errorf("gemgate's worker round trip: parent %q (want %s), network.transport %q (want pipe)", client.parent(), server.SpanID, client.tag("network.transport"))
	}
	w := one(t, spans, demo.TraceServiceName, "tools/call echo", "server")
	if w.parent() != client.SpanID {
		t.Errorf("the worker's span has parent %q, want gemgate's worker round trip %s: the traceparent gemgate wrote to the worker", w.parent(), client.SpanID)
	}
	noSecrets(t, spans, token)
}

// noSecrets fails the test if a span's tag carries the tool's argument or one of secrets.
func noSecrets(t *testing.T, spans []jspan, secrets ...string) {
	t.Helper()
	for _, s := range spans {
		for _, tag := range s.Tags {
			v := fmt.Sprint(tag.Value)
			for _, bad := range append([]string{traceArgument}, secrets...) {
				if bad != "" && strings.Contains(v, bad) {
					t.Errorf("%s: tag %s carries an argument or a credential", s, tag.Key)
				}
			}
		}
	}
}

// startDevEnv is startDev (harness_test.go) with extra environment for gemgate, which its
// workers inherit.
func startDevEnv(t *testing.T, env []string) *gemgate {
	t.Helper()
	args := []string{"dev", "--json", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-format", "json", "--log-level", "debug",
		"--worker", "command", "--worker-command", workerBin + " worker demo",
		"--read-only-tools", strings.Join(demo.ReadOnlyTools, ",")}
	return launch(t, launchOpts{Args: args, Env: env, FirstStdout: func(g *gemgate, line []byte) error {
		return json.Unmarshal(line, &g.devInfo)
	}})
}
