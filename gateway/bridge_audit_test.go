package gateway

import (
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/telemetry"
)

// A tools/call through the bridge is audited and counted each round, as a 2026-07-28 worker's
// is: the round that parked it (input_required), then the client's retry, which the tool's
// answer ends (ok), each line with its own request's trace id. There is one round trip span,
// the parked round's: the retry sends the worker no call of its own.
func TestBridgedCallIsAuditedEachRound(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	f := newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.Workers = &testLauncher{mode: "legacydemo", dataDir: t.TempDir()}
		o.Tracing = telemetry.NewWith(tp, telemetry.Settings{})
	})
	c := f.client("alice-rw")
	state, responses := parkDeleteNote(t, c)
	r := c.sessionless("3", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": elicitingMeta(),
		"inputResponses": responses, "requestState": state})
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
	// A server span ends after its handler, and so after the handler's audit line.
	var first, retry sdktrace.ReadOnlySpan
	for _, s := range spansNamed(rec, "tools/call delete_note") {
		if s.SpanKind() == trace.SpanKindServer && attrs(s)["jsonrpc.request.id"] == "2" {
			first = s
		}
		if s.SpanKind() == trace.SpanKindServer && attrs(s)["jsonrpc.request.id"] == "3" {
			retry = s
		}
	}
	if first == nil || retry == nil {
		t.Fatal("no server span of the parked round or of the retry")
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
	if len(lines) != 2 {
		t.Fatalf("%d audit lines of delete_note through the bridge, want 2: %v", len(lines), lines)
	}
	for i, want := range []struct {
		outcome string
		span    sdktrace.ReadOnlySpan
	}{{"input_required", first}, {"ok", retry}} {
		l := lines[i]
		if l["outcome"] != want.outcome || l["era"] != sessionless.Version || l["trace_id"] != want.span.SpanContext().TraceID().String() {
			t.Errorf("audit line %d: %v, want outcome %s, era %s, trace_id %s", i, l, want.outcome, sessionless.Version, want.span.SpanContext().TraceID())
		}
	}
	if v := metricValue(t, f, "gemgate_tool_calls_total", "outcome", "input_required"); v != 1 {
		t.Errorf("tool_calls_total{outcome=input_required} = %v, want 1", v)
	}
	if v := metricValue(t, f, "gemgate_tool_calls_total", "outcome", "ok"); v != 2 { // write_note's and the retry's
		t.Errorf("tool_calls_total{outcome=ok} = %v, want 2 (write_note and the retry)", v)
	}
	if got := attrs(retry)["gemgate.outcome"]; got != "ok" {
		t.Errorf("the retry's server span has outcome %v, want ok", got)
	}
}
