//lint:file-ignore SA1019 sampling is deprecated from 2026-07-28 but still part of 2025-11-25, which gemgate serves; ask_model's sampling request must carry the trace context too.

package demo

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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

// tracedServer serves NewServer(o) with traceRequests(tp) over in-memory transports to a
// client speaking version ("" = the SDK's latest, 2026-07-28).
func tracedServer(t *testing.T, o Options, tp trace.TracerProvider, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	srv, err := NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	if tp != nil {
		srv.AddReceivingMiddleware(traceRequests(tp))
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "1"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// askingClient answers delete_note's confirmation and ask_model's sampling request, and
// keeps the _meta of each request it is asked.
func askingClient() (*mcp.ClientOptions, chan mcp.Meta) {
	asked := make(chan mcp.Meta, 4)
	return &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params.Meta
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			asked <- req.Params.Meta
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "forty-two"}}, nil
		},
	}, asked
}

// askOnce calls tool (delete_note or ask_model) with the caller's traceparent and returns
// the _meta of the one request the client was asked.
func askOnce(t *testing.T, cs *mcp.ClientSession, asked chan mcp.Meta, tool string) mcp.Meta {
	t.Helper()
	ctx := context.Background()
	args := map[string]any{"prompt": "what is six times seven?"}
	if tool == "delete_note" {
		args = map[string]any{"name": "doomed"}
		mustOK(t, call(t, cs, "write_note", map[string]any{"name": "doomed", "text": "x"}))
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args,
		Meta: mcp.Meta{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01", "tracestate": "vendor=1"}})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %v", tool, err, res)
	}
	select {
	case m := <-asked:
		if len(asked) != 0 {
			t.Fatalf("%s asked the client more than once", tool)
		}
		return m
	default:
		t.Fatalf("%s asked the client nothing", tool)
		return nil
	}
}

// The elicitation of delete_note and the sampling request of ask_model carry the context of
// the worker's span for the call onward, in both eras: traceparent in the same trace with
// that span as parent, and the caller's tracestate.
func TestRequestsToTheClientCarryTheSpan(t *testing.T) {
	for _, version := range []string{legacyVersion, ""} {
		for _, tool := range []string{"delete_note", "ask_model"} {
			t.Run(tool+"/version="+version, func(t *testing.T) {
				rec := tracetest.NewSpanRecorder()
				copts, asked := askingClient()
				cs := tracedServer(t, Options{DataDir: t.TempDir(), User: "alice"}, newProvider(rec), copts, version)
				meta := askOnce(t, cs, asked, tool)

				tp, _ := meta["traceparent"].(string)
				parts := strings.Split(tp, "-")
				if len(parts) != 4 || parts[0] != "00" || parts[3] != "01" {
					t.Fatalf("the request's _meta %v has no valid sampled traceparent", meta)
				}
				if parts[1] != callerTrace {
					t.Errorf("traceparent's trace id %s, want the caller's %s", parts[1], callerTrace)
				}
				// The span that asked: in 2025-11-25 the SDK asks within the call; in
				// 2026-07-28 the call answers input_required and is retried, two spans.
				var calls []sdktrace.ReadOnlySpan
				for _, s := range rec.Ended() {
					if s.Name() == "tools/call "+tool {
						calls = append(calls, s)
					}
				}
				want := 1
				if version == "" {
					want = 2
				}
				if len(calls) != want {
					t.Fatalf("%d spans tools/call %s, want %d: %v", len(calls), tool, want, names(rec.Ended()))
				}
				if got, asker := parts[2], calls[0].SpanContext().SpanID().String(); got != asker {
					t.Errorf("traceparent's parent %s, want the span of the call that asked %s (spans: %v)", got, asker, calls)
				}
				if got := meta["tracestate"]; got != "vendor=1" {
					t.Errorf("tracestate %v, want the caller's vendor=1", got)
				}
				if len(meta) != 2 {
					t.Errorf("the request's _meta %v holds more than the trace context", meta)
				}
			})
		}
	}
}

// With tracing off, or a span that is not recording (not sampled), the requests to the
// client carry no _meta.
func TestRequestsToTheClientWithoutARecordingSpan(t *testing.T) {
	never := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	for name, tp := range map[string]trace.TracerProvider{"off": nil, "not sampled": never} {
		for _, version := range []string{legacyVersion, ""} {
			for _, tool := range []string{"delete_note", "ask_model"} {
				t.Run(name+"/"+tool+"/version="+version, func(t *testing.T) {
					copts, asked := askingClient()
					cs := tracedServer(t, Options{DataDir: t.TempDir(), User: "alice"}, tp, copts, version)
					if meta := askOnce(t, cs, asked, tool); meta != nil {
						t.Errorf("the request carries _meta %v", meta)
					}
				})
			}
		}
	}
	if m := traceMeta(context.Background()); m != nil {
		t.Errorf("traceMeta without a span: %v", m)
	}
}
