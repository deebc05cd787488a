package pool

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Every series a dashboard queries exists from the start, before any worker ran: a gemgate
// that has not started a worker yet still answers "0", not "no data".
func TestMetricsExistBeforeAnyWorker(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, f := range families {
		series[f.GetName()] = len(f.GetMetric())
	}
	for name, want := range map[string]int{
		"gemgate_workers_running": 2, "gemgate_worker_start_seconds": 1, "gemgate_worker_exits_total": 3,
		"gemgate_worker_sessions": 1, "gemgate_worker_queue_depth": 1,
	} {
		if series[name] != want {
			t.Errorf("%s has %d series at start, want %d", name, series[name], want)
		}
	}
}
