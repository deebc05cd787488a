package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// A scrape of the metrics listener parses as Prometheus text and carries gemgate's families.
func TestMetricsListenerScrapeParses(t *testing.T) {
	c, err := load("serve", []string{"--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, false)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := build(context.Background(), c, ln, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	go srv.metrics.Serve(srv.metricsLn)
	t.Cleanup(func() { srv.metrics.Close(); srv.gw.Close(); ln.Close() })

	resp, err := http.Get("http://" + srv.metricsLn.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the scrape is not Prometheus text format: %v", err)
	}
	for _, name := range []string{"gemgate_sessions_open", "gemgate_workers_running", "gemgate_sse_streams_open", "go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := families[name]; !ok {
			t.Errorf("scrape lacks %s", name)
		}
	}
}
