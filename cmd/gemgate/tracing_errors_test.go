package main

import (
	"bytes"
	stdlog "log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The exporter's errors (a collector that refuses a batch or cannot be reached) go to
// gemgate's log, as one JSON line at warn like every other line, not to Go's standard logger,
// whose plain "2026/12/05 10:13:18 traces export: ..." lines a pipeline that reads JSON lines
// cannot parse, and which no rate bounds.
func TestTraceExportErrorsGoToTheLog(t *testing.T) {
	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer collector.Close()
	var std bytes.Buffer
	prev, flags := stdlog.Writer(), stdlog.Flags()
	stdlog.SetOutput(&std)
	t.Cleanup(func() { stdlog.SetOutput(prev); stdlog.SetFlags(flags) })

	c := mustLoad(t, unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off",
		"--trace-endpoint", collector.URL, "--log-format", "json")...)
	srv, logs := buildLoggedServer(t, c)
	for range 3 {
		q, _ := srv.tracing.Arrive(httptest.NewRequest(http.MethodPost, "/mcp", nil))
		q.End(http.StatusUnauthorized)
	}
	_ = srv.tracing.Shutdown(time.Now().Add(5 * time.Second))
	if posts.Load() == 0 {
		t.Fatal("the collector got no batch")
	}
	if std.Len() != 0 {
		t.Errorf("the exporter's error went to Go's standard logger: %q", std.String())
	}
	var warned bool
	for _, l := range strings.Split(logs.String(), "\n") {
		warned = warned || strings.Contains(l, `"level":"WARN"`) && strings.Contains(l, "400")
	}
	if !warned {
		t.Errorf("no warning of the failed export in gemgate's log:\n%s", logs.String())
	}
}

// gemgate check finds what serve would refuse or misread in the standard tracing variables,
// as it does in trace_endpoint: a protocol the exporter does not speak (serve then refuses to
// start after check said all was well), and an endpoint that is no http(s) URL with a host
// (serve started and said it exported there, where the exporter reads no such URL).
func TestCheckFindsTracingEnvironmentServeCannotUse(t *testing.T) {
	base := []string{"--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off"}
	for _, tc := range []struct{ name, value, endpoint string }{
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "http://collector.test:4318"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc ", "http://collector.test:4317"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector.test:4318", ""},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector.test:4318/v1/traces", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
				"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
				t.Setenv(k, "")
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", tc.endpoint)
			t.Setenv(tc.name, tc.value)
			var out, errb bytes.Buffer
			checkCommand(t.Context(), unsandboxed(base...), &out, &errb)
			if !strings.Contains(out.String(), "PROBLEM") || !strings.Contains(out.String(), tc.name) {
				t.Errorf("%s=%q: check found no problem naming it:\n%s", tc.name, tc.value, out.String())
			}
			c := mustLoad(t, unsandboxed(base...)...)
			if errs := c.validate(); len(errs) == 0 {
				t.Errorf("%s=%q: the configuration is valid, so serve starts", tc.name, tc.value)
			}
		})
	}
}
