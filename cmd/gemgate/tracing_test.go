package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// `gemgate check` says where traces go, from the standard environment or trace_endpoint, or
// that tracing is off; a trace_endpoint that is no URL is a configuration problem.
func TestCheckSaysWhereTracesGo(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	base := []string{"--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off"}
	check := func(args ...string) string {
		var out, errb bytes.Buffer
		checkCommand(context.Background(), unsandboxed(append(base, args...)...), &out, &errb)
		return out.String()
	}
	if out := check(); !strings.Contains(out, "tracing: off") {
		t.Errorf("no endpoint:\n%s", out)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector.test:4318")
	if out := check(); !strings.Contains(out, "tracing: OTLP http/protobuf to http://collector.test:4318 (from OTEL_EXPORTER_OTLP_ENDPOINT)") {
		t.Errorf("standard endpoint:\n%s", out)
	}
	if out := check("--trace-endpoint", "http://jaeger.test:4318"); !strings.Contains(out, "to http://jaeger.test:4318 (from trace_endpoint)") {
		t.Errorf("trace_endpoint:\n%s", out)
	}
	if out := check("--trace-endpoint", "jaeger:4318"); !strings.Contains(out, "PROBLEM") || !strings.Contains(out, "trace_endpoint") {
		t.Errorf("a trace_endpoint without scheme:\n%s", out)
	}
}
