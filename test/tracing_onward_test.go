//lint:file-ignore SA1019 sampling is deprecated from 2026-07-28 but still part of 2025-11-25, which gemgate serves; ask_model's sampling request is traced like the elicitation.

package test

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemgate/gemgate/worker/demo"
)

// The worker's own requests to the client carry its context onward: delete_note's
// elicitation and ask_model's sampling request, asked through `gemgate dev` with tracing to a
// real Jaeger, reach the client with a params._meta.traceparent in the client's trace whose
// parent is the demo worker's span for the call, as Jaeger reports that span. In 2025-11-25
// the worker's go-sdk sends them as requests within the call, which gemgate passes to the
// client's session; in 2026-07-28 they ride in the input-required result, which gemgate
// passes to the client with only its requestState wrapped, and the asking span is the one
// of the call that answered input_required (the client's retry is a call of its own).
func TestTracingWorkerRequestsCarryContext(t *testing.T) {
	t.Parallel()
	j := startJaeger(t)
	g := startDevEnv(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + j.otlpHTTP, "OTEL_BSP_SCHEDULE_DELAY=100"})
	token := g.Tokens["alice"]

	for _, era := range []string{"2025", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			asked := make(chan mcp.Meta, 4)
			opts := &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked <- req.Params.Meta
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
				},
				CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					asked <- req.Params.Meta
					return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "forty-two"}}, nil
				},
			}
			var cs *mcp.ClientSession
			if era == "2025" {
				cs = connect(t, g.URL, token, opts)
			} else {
				cs = connectSessionless(t, g.URL, token, opts)
			}
			if res := callTool(t, cs, "write_note", map[string]any{"name": "doomed", "text": "x"}); res.IsError {
				t.Fatalf("write_note: %s", text(res))
			}
			for tool, args := range map[string]map[string]any{
				"delete_note": {"name": "doomed"},
				"ask_model":   {"prompt": "what is six times seven?"},
			} {
				t.Run(tool, func(t *testing.T) {
					traceID := newTraceID()
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: traceMeta(traceID)})
					if err != nil || res.IsError {
						t.Fatalf("%s: %v %v", tool, err, res)
					}
					var meta mcp.Meta
					select {
					case meta = <-asked:
					default:
						t.Fatalf("%s asked the client nothing", tool)
					}
					if len(asked) != 0 {
						t.Fatalf("%s asked the client more than once", tool)
					}
					checkOnward(t, j, era, tool, traceID, meta)
				})
			}
		})
	}
}

// checkOnward checks the _meta of the request the client was asked during the call of tool
// in trace traceID against the trace Jaeger holds.
func checkOnward(t *testing.T, j *jaeger, era, tool, traceID string, meta mcp.Meta) {
	t.Helper()
	tp, _ := meta["traceparent"].(string)
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 {
		t.Fatalf("the request the client was asked has _meta %v: no traceparent", meta)
	}
	if parts[1] != traceID {
		t.Errorf("its traceparent's trace id is %s, want the client's %s", parts[1], traceID)
	}
	if len(meta) != 1 {
		t.Errorf("its _meta %v holds more than the worker's traceparent (the client sent no tracestate)", meta)
	}
	// A 2026-07-28 call that asks is two calls: the one answered input_required and the
	// client's retry, each with its worker span.
	name, want := "tools/call "+tool, 1
	if era != "2025" {
		want = 2
	}
	var spans []jspan
	if !poll(30*time.Second, func() bool {
		spans = j.trace(t, traceID)
		return len(find(spans, demo.TraceServiceName, name, "server")) >= want &&
			len(find(spans, "gemgate", name, "server")) >= want && len(find(spans, "gemgate", name, "client")) >= want
	}) {
		t.Fatalf("after 30 s, trace %s lacks %d worker spans %q and gemgate's; it holds:\n%s", traceID, want, name, spanList(spans))
	}
	workers := find(spans, demo.TraceServiceName, name, "server")
	if len(workers) != want {
		t.Fatalf("%d worker spans %q, want %d; the trace:\n%s", len(workers), name, want, spanList(spans))
	}
	var asker *jspan
	for i, w := range workers {
		if w.SpanID == parts[2] {
			asker = &workers[i]
		}
	}
	if asker == nil {
		t.Fatalf("the traceparent's parent span %s is no gemgate-demo-worker span %q; the trace:\n%s", parts[2], name, spanList(spans))
	}
	// The asking span is under gemgate's worker round trip of the call that asked: the call
	// itself in 2025-11-25, the one answered input_required in 2026-07-28.
	byID := map[string]jspan{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	trip, ok := byID[asker.parent()]
	if !ok || trip.Service != "gemgate" || trip.tag("span.kind") != "client" {
		t.Fatalf("the asking worker span's parent %q is not gemgate's worker round trip; the trace:\n%s", asker.parent(), spanList(spans))
	}
	server, ok := byID[trip.parent()]
	wantOutcome := "ok"
	if era != "2025" {
		wantOutcome = "input_required"
	}
	if !ok || server.Service != "gemgate" || server.parent() != clientSpan || server.tag("gemgate.outcome") != wantOutcome {
		t.Errorf("the asking call's gemgate span %s has outcome %q, want %q under the client's span; the trace:\n%s",
			server, server.tag("gemgate.outcome"), wantOutcome, spanList(spans))
	}
}

// onwardMeta is the params._meta of the elicitation stubbornworker's peek asks
// (testdata/stubbornworker): a trace context of its own and a member of another kind, all of
// which the client must get as they are.
var onwardMeta = map[string]any{
	"traceparent":     "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	"tracestate":      "worker=1,vendor=x",
	"io.example/kept": map[string]any{"n": 1.0},
}

// A worker's request reaches the client with its params._meta as the worker wrote it, in a
// 2025 session (gemgate passes the request on) and through the bridge to a 2026-07-28 client
// (gemgate parks it and puts it in an input-required result).
func TestWorkerRequestMetaPassesUnchanged(t *testing.T) {
	t.Parallel()
	// stubbornworker speaks 2025-06-18 only (server/discover is an unknown method, so gemgate
	// bridges a 2026-07-28 client to it); its peek asks the client mid-call.
	g := startDev(t, "--worker-command", stubbornWorker(t), "--worker-start-rate", "0", "--read-only-tools", "peek")
	token := g.Tokens["alice"]
	for _, era := range []string{"2025", "2026-07-28 bridged"} {
		t.Run(era, func(t *testing.T) {
			asked := make(chan mcp.Meta, 2)
			opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked <- req.Params.Meta
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
			}}
			var cs *mcp.ClientSession
			if era == "2025" {
				cs = connect(t, g.URL, token, opts)
			} else {
				cs = connectSessionless(t, g.URL, token, opts)
			}
			if res := callTool(t, cs, "peek", map[string]any{}); res.IsError || !strings.HasPrefix(text(res), "confirmation: ") {
				t.Fatalf("peek: %q (isError %v)", text(res), res.IsError)
			}
			select {
			case meta := <-asked:
				if !maps.EqualFunc(meta, onwardMeta, func(a, b any) bool { x, _ := json.Marshal(a); y, _ := json.Marshal(b); return string(x) == string(y) }) {
					t.Errorf("the client got the worker's elicitation with _meta %v, want the worker's %v", meta, onwardMeta)
				}
			default:
				t.Fatal("the client was asked nothing")
			}
			if era != "2025" && (!logShows(g, `"outcome":"input_required"`, 10*time.Second) || strings.Contains(g.logs.String(), `"sessionless":true`)) {
				t.Error("the 2026-07-28 call was not bridged: no input-required audit line, or a sessionless worker")
			}
		})
	}
}
