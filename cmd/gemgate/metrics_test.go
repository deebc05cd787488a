package main

import (
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/metrics"
)

// A scrape of the metrics listener parses as Prometheus text and carries gemgate's families.
func TestMetricsListenerScrapeParses(t *testing.T) {
	srv := buildServer(t, mustLoad(t, unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0")...))
	go srv.metrics.Serve(srv.metricsLn)

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

// describer records the descriptions of what is registered with it.
type describer struct {
	prometheus.Registerer
	descs []string
}

func (d *describer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		d.descs = append(d.descs, desc.String())
	}
	return d.Registerer.Register(c)
}

func (d *describer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := d.Register(c); err != nil {
			panic(err)
		}
	}
}

// Every metric gemgate registers has its row in docs/operations.md, naming each of its labels.
func TestEveryMetricIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		if m := regexp.MustCompile("^\\| `(gemgate_[a-z_]+)` \\|").FindStringSubmatch(line); m != nil {
			rows[m[1]] = line
		}
	}
	reg := &describer{Registerer: prometheus.NewRegistry()}
	metrics.New(reg)
	auth.NewMetrics(reg)
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	labels := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	if len(reg.descs) < 10 {
		t.Fatalf("only %d metrics described: %q", len(reg.descs), reg.descs)
	}
	for _, d := range reg.descs {
		n := name.FindStringSubmatch(d)
		if n == nil {
			t.Fatalf("no name in %s", d)
		}
		row, ok := rows[n[1]]
		if !ok {
			t.Errorf("%s has no row in docs/operations.md", n[1])
			continue
		}
		if l := labels.FindStringSubmatch(d); l != nil && l[1] != "" {
			for _, label := range strings.Split(l[1], ",") {
				if label = strings.TrimSpace(label); !strings.Contains(row, "`"+label+"`") {
					t.Errorf("the row of %s does not name its label %q: %s", n[1], label, row)
				}
			}
		}
	}
}
