package gateway

import (
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gemgate/gemgate/telemetry"
)

// A request whose trace gemgate does not record (its parent says not sampled, under the
// default parentbased_always_on; or a ratio sampler's no) is still traced for the worker as
// docs/operations.md says: the client's trace keys are replaced, not passed on. The client's
// baggage without trace_baggage, a malformed traceparent or a case variant of one would reach
// the worker as the client wrote them, and a traceparent that says sampled would make a worker
// that traces record a trace gemgate chose not to.
func TestUnsampledRequestPassesNoClientTraceKeys(t *testing.T) {
	const unsampled = "00-" + clientTrace + "-" + clientSpan + "-00"
	for _, tc := range []struct{ name, meta, header string }{
		{"body parent not sampled", `{"traceparent":"` + unsampled + `","tracestate":"vendor=1","baggage":"secret=abc"}`, ""},
		{"header parent not sampled, a case variant", `{"Traceparent":"` + strings.Replace(clientParent, "-00f0", "-00f1", 1) + `","Baggage":"secret=abc"}`, unsampled},
		{"header parent not sampled, body's malformed", `{"traceparent":"00-zz-bad-01","BAGGAGE":"secret=abc"}`, unsampled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, rec := tracedFixture(t, "echometa", telemetry.Settings{}, false)
			c := f.client("alice-rw")
			c.open()
			var header []string
			if tc.header != "" {
				header = []string{"traceparent", tc.header}
			}
			meta := workerMeta(t, c.post(callBody("8", "echo", tc.meta), header...))
			for k := range meta {
				if strings.EqualFold(k, "baggage") {
					t.Errorf("the client's baggage reached the worker without trace_baggage: %v", meta)
				}
				if strings.EqualFold(k, "traceparent") && k != "traceparent" {
					t.Errorf("a case variant of traceparent reached the worker: %v", meta)
				}
			}
			tp, _ := meta["traceparent"].(string)
			if tp == "00-zz-bad-01" {
				t.Errorf("a malformed traceparent reached the worker: %v", meta)
			}
			if strings.HasSuffix(tp, "-01") {
				t.Errorf("the worker got traceparent %q, which says sampled for a trace gemgate did not record", tp)
			}
			if n := len(spansNamed(rec, "tools/call echo")); n != 0 {
				t.Errorf("%d spans recorded for a call whose trace is not sampled", n)
			}
		})
	}
}

// Under a sampler that does not follow the parent (OTEL_TRACES_SAMPLER=traceidratio), a
// client's traceparent that says sampled is not what the worker gets when gemgate drops the
// trace: else every client could make a worker that traces record each of its calls.
func TestRatioSamplerDropIsWhatTheWorkerGets(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.TraceIDRatioBased(0)))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	f := newFixture(t, func(o *Options) {
		o.Tracing = telemetry.NewWith(tp, telemetry.Settings{})
		o.Workers = &testLauncher{mode: "echometa", dataDir: t.TempDir()}
	})
	c := f.client("alice-rw")
	c.open()
	meta := workerMeta(t, c.post(callBody("9", "echo", `{"traceparent":"`+clientParent+`"}`)))
	if tp, _ := meta["traceparent"].(string); tp == clientParent || strings.HasSuffix(tp, "-01") {
		t.Errorf("the worker got traceparent %q, sampled, for a trace gemgate dropped", tp)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("%d spans recorded under a sampler of ratio 0", n)
	}
}

// A session's notification to its worker is traced as a request is: with tracing on, the
// worker gets gemgate's context in place of the client's trace keys, and never the client's
// baggage without trace_baggage (docs/operations.md, "Baggage"); a malformed traceparent or a
// case variant does not reach it either.
func TestNotificationPassesNoClientTraceKeys(t *testing.T) {
	f, _ := tracedFixture(t, "echometa", telemetry.Settings{}, false)
	c := f.client("alice-rw")
	c.open()
	note := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,` +
		`"_meta":{"traceparent":"00-zz-bad-01","Baggage":"secret=abc","x":1}}}`
	if r := c.post(note); r.status != http.StatusAccepted {
		t.Fatalf("notification: %d %s", r.status, r.body)
	}
	meta := workerMeta(t, c.post(callBody("10", "lastnote", `{}`)))
	for k := range meta {
		if strings.EqualFold(k, "baggage") {
			t.Errorf("the client's baggage reached the worker without trace_baggage: %v", meta)
		}
	}
	if meta["traceparent"] == "00-zz-bad-01" {
		t.Errorf("a malformed traceparent reached the worker: %v", meta)
	}
	if meta["x"] != float64(1) {
		t.Errorf("the notification's other _meta members did not reach the worker: %v", meta)
	}
}
