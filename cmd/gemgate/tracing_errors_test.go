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
