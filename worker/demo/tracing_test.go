package demo

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

// recorded runs the worker on pipes with an in-memory span recorder and returns the client
// and the recorder.
func recorded(t *testing.T) (*mcp.ClientSession, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := newProvider(rec)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cs, _, _, _ := startRun(t, ctx, Options{Tracer: tp}, nil)
	return cs, rec
}

func spanNamed(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1 (spans: %v)", len(found), name, names(rec.Ended()))
	}
	return found[0]
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name())
	}
	return n
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.String()
	}
	for _, kv := range s.Resource().Attributes() {
		m["resource."+kv.Key] = kv.Value.String()
	}
	return m
}

func TestSpanContinuesTheTraceInMeta(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "gemgate") // inherited from gemgate: not the worker's name
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test")
	cs, rec := recorded(t)
	ctx := context.Background()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"},
		Meta: mcp.Meta{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01", "tracestate": "vendor=1"}})
	if err != nil || res.IsError {
		t.Fatalf("echo: %v %v", err, res)
	}

	s := spanNamed(t, rec, "tools/call echo")
	if s.SpanKind() != trace.SpanKindServer {
		t.Errorf("kind %v, want server", s.SpanKind())
	}
	if got := s.SpanContext().TraceID().String(); got != callerTrace {
		t.Errorf("trace id %s, want the caller's %s", got, callerTrace)
	}
	if got := s.Parent().SpanID().String(); got != callerSpan || !s.Parent().IsRemote() {
		t.Errorf("parent %s (remote %v), want the caller's span %s", got, s.Parent().IsRemote(), callerSpan)
	}
	if got := s.SpanContext().TraceState().Get("vendor"); got != "1" {
		t.Errorf("tracestate vendor=%q, want the caller's 1", got)
	}
	a := attrs(s)
	for k, want := range map[attribute.Key]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		"network.transport": "pipe", "resource.service.name": TraceServiceName,
		"resource.deployment.environment.name": "test",
	} {
		if a[k] != want {
			t.Errorf("%s = %q, want %q", k, a[k], want)
		}
	}
	if _, ok := a["error.type"]; ok || s.Status().Code == codes.Error {
		t.Errorf("a successful call is marked failed: %v %v", a["error.type"], s.Status())
	}

	// Without a traceparent a request starts a trace of its own; notifications get no span.
	list := spanNamed(t, rec, "tools/list")
	if list.Parent().IsValid() || list.SpanContext().TraceID().String() == callerTrace {
		t.Errorf("tools/list without _meta has parent %v in trace %s", list.Parent().SpanID(), list.SpanContext().TraceID())
	}
	spanNamed(t, rec, "initialize")
	if n := len(rec.Ended()); n != 3 {
		t.Errorf("%d spans, want 3 (initialize, tools/list, tools/call): %v", n, names(rec.Ended()))
	}
}

func TestSpanOfAFailedCall(t *testing.T) {
	cs, rec := recorded(t)
	ctx := context.Background()
	// A malformed traceparent is ignored: the span is a root, and the call is served.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_note", Arguments: map[string]any{"name": "x"},
		Meta: mcp.Meta{"traceparent": "00-not-a-trace-01"}})
	if err != nil || !res.IsError {
		t.Fatalf("read_note without a store: %v %v, want a tool error", err, res)
	}
	s := spanNamed(t, rec, "tools/call read_note")
	if s.Parent().IsValid() {
		t.Errorf("a malformed traceparent became parent %v", s.Parent())
	}
	if s.Status().Code != codes.Error || attrs(s)["error.type"] != "tool_error" {
		t.Errorf("tool error: status %v, error.type %q", s.Status(), attrs(s)["error.type"])
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Fatal("an unknown tool was served")
	}
	s = spanNamed(t, rec, "tools/call no_such_tool")
	if s.Status().Code != codes.Error || attrs(s)["error.type"] != "jsonrpc_error" {
		t.Errorf("protocol error: status %v, error.type %q", s.Status(), attrs(s)["error.type"])
	}
}

// TestOTLPSpansAreFlushedBeforeRunReturns runs the worker as `gemgate worker demo` does, with
// the standard OTLP variables pointing at a stand-in collector (an HTTP server that decodes
// OTLP/HTTP protobuf), and finds the span there as soon as Run has returned.
func TestOTLPSpansAreFlushedBeforeRunReturns(t *testing.T) {
	var mu sync.Mutex
	var got []*coltrace.ExportTraceServiceRequest
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &coltrace.ExportTraceServiceRequest{}
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, req) != nil {
			http.Error(w, "not OTLP traces", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_SERVICE_NAME", "gemgate")
	o := OptionsFromEnv()
	if !o.OTLP {
		t.Fatal("OptionsFromEnv: OTLP off with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	o.Logger, o.Stderr = nil, io.Discard
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, _, stdin, ran := startRun(t, ctx, o, nil)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"},
		Meta: mcp.Meta{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"}}); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	var found bool
	for _, req := range got {
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, kv := range rs.Resource.Attributes {
				if kv.Key == "service.name" {
					service = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					if s.Name == "tools/call echo" && trace.TraceID(s.TraceId).String() == callerTrace && trace.SpanID(s.ParentSpanId).String() == callerSpan {
						found = true
						if service != TraceServiceName {
							t.Errorf("service.name %q, want %q", service, TraceServiceName)
						}
					}
				}
			}
		}
	}
	if !found {
		t.Errorf("the collector holds no span tools/call echo under the caller's span after Run returned (%d exports)", len(got))
	}
}

func TestNoOTLPWithoutAnEndpoint(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	if OptionsFromEnv().OTLP {
		t.Error("OTLP on without an endpoint")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces")
	if !OptionsFromEnv().OTLP {
		t.Error("OTLP off with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set")
	}
}
