package gateway

import (
	"testing"
	"time"
	"unicode/utf8"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/telemetry"
)

// Every text of every span is valid UTF-8, whatever bytes a client put in a header gemgate
// names on the span (MCP-Protocol-Version): the OTLP exporter marshals a batch as protobuf,
// which refuses a string that is not, and so drops the whole batch, every user's spans of
// the last five seconds with the one request's.
func TestSpansHoldOnlyValidUTF8(t *testing.T) {
	f, rec := tracedFixture(t, "demo", telemetry.Settings{}, false)
	c := f.client("alice-rw")
	c.open()
	c.post(callBody("3", "echo", `{}`), "MCP-Protocol-Version", "2025-06-18\xff\xfe")
	c.sessionless("4", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{}}, "MCP-Protocol-Version", "\xc3")
	eventually(t, 5*time.Second, "both requests' server spans ended", func() bool {
		n := 0
		for _, s := range spansNamed(rec, "tools/call echo") {
			if s.SpanKind() == trace.SpanKindServer {
				n++
			}
		}
		return n == 2
	})
	for _, s := range rec.Ended() {
		checkSpanUTF8(t, s)
	}
}

func checkSpanUTF8(t *testing.T, s sdktrace.ReadOnlySpan) {
	t.Helper()
	if !utf8.ValidString(s.Name()) {
		t.Errorf("span name %q is not valid UTF-8", s.Name())
	}
	for _, a := range s.Attributes() {
		if v := a.Value.String(); !utf8.ValidString(v) {
			t.Errorf("span %q: %s = %q is not valid UTF-8", s.Name(), a.Key, v)
		}
	}
}
