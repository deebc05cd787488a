package gateway

import (
	"encoding/json"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/telemetry"
)

// A tools/call through the bridge is ended once, by the round that parked it: one audit line
// and one count (input_required), with the trace id of that round's request, and one round
// trip span; the client's retry, which the worker's answer ends, adds no audit line, no count
// and no round trip span (waiting.run ends nothing without a span).
func TestBridgedCallIsEndedOnce(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	f := newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.Workers = &testLauncher{mode: "legacydemo", dataDir: t.TempDir()}
		o.Tracing = telemetry.NewWith(tp, telemetry.Settings{})
	})
	c := f.client("alice-rw")
	if r := c.sessionless("1", "tools/call", map[string]any{"name": "write_note", "arguments": map[string]any{"name": "n", "text": "x"}}); r.only(t).Error != nil {
		t.Fatalf("write_note: %s", r.body)
	}
	r := c.sessionless("2", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": elicitingMeta()})
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(r.only(t).Result, &res); err != nil || res.ResultType != "input_required" {
		t.Fatalf("delete_note: %s", r.body)
	}
	responses := map[string]any{}
	for k := range res.InputRequests {
		responses[k] = map[string]any{"action": "accept", "content": map[string]any{}}
	}
	r = c.sessionless("3", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": elicitingMeta(),
		"inputResponses": responses, "requestState": res.RequestState})
	if m := r.only(t); m.Error != nil || isToolError(m.Result) {
		t.Fatalf("retry: %s", r.body)
	}
	// Both requests' SERVER spans end after their handler (and its audit line).
	eventually(t, 5*time.Second, "the retry's server span", func() bool {
		n := 0
		for _, s := range spansNamed(rec, "tools/call delete_note") {
			if s.SpanKind() == trace.SpanKindServer {
				n++
			}
		}
		return n == 2
	})
	time.Sleep(100 * time.Millisecond) // a late second line or span would be written by now

	var first sdktrace.ReadOnlySpan
	for _, s := range spansNamed(rec, "tools/call delete_note") {
		if s.SpanKind() == trace.SpanKindServer && attrs(s)["jsonrpc.request.id"] == "2" {
			first = s
		}
	}
	if first == nil {
		t.Fatal("no server span of the parked round")
	}
	rt := oneSpan(t, rec, "tools/call delete_note", trace.SpanKindClient, nil)
	if rt.Parent().SpanID() != first.SpanContext().SpanID() || attrs(rt)["gemgate.outcome"] != "input_required" {
		t.Errorf("round trip span %v under %v, want the parked round's, outcome input_required", attrs(rt), rt.Parent().SpanID())
	}

	var lines []map[string]any
	for _, rec := range f.log.records(t) {
		if rec["msg"] == "audit tools/call" && rec["tool"] == "delete_note" {
			lines = append(lines, rec)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d audit lines of delete_note through the bridge, want 1: %v", len(lines), lines)
	}
	l := lines[0]
	if l["outcome"] != "input_required" || l["era"] != sessionless.Version || l["trace_id"] != first.SpanContext().TraceID().String() {
		t.Errorf("audit line %v, want outcome input_required, era %s, trace_id %s", l, sessionless.Version, first.SpanContext().TraceID())
	}
	if v := metricValue(t, f, "gemgate_tool_calls_total", "outcome", "input_required"); v != 1 {
		t.Errorf("tool_calls_total{outcome=input_required} = %v, want 1", v)
	}
	if v := metricValue(t, f, "gemgate_tool_calls_total", "outcome", "ok"); v != 1 { // write_note's
		t.Errorf("tool_calls_total{outcome=ok} = %v, want 1 (write_note; the retry is not counted)", v)
	}
}
