package gateway

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetricsSeriesCached: the per-call counters and the duration histogram count every
// call into the series of its labels, whether the series was looked up before or not, and
// a call costs no allocation once its series exist.
func TestMetricsSeriesCached(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	for range 3 {
		m.request("tools/call", 200, time.Millisecond)
		m.toolCall("ok")
	}
	m.request("tools/call", 429, time.Millisecond)
	m.request("ping", 200, time.Millisecond)
	m.toolCall("error")
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"tools/call 200", testutil.ToFloat64(m.requests.WithLabelValues("tools/call", "200")), 3},
		{"tools/call 429", testutil.ToFloat64(m.requests.WithLabelValues("tools/call", "429")), 1},
		{"ping 200", testutil.ToFloat64(m.requests.WithLabelValues("ping", "200")), 1},
		{"tool calls ok", testutil.ToFloat64(m.toolCalls.WithLabelValues("ok")), 3},
		{"tool calls error", testutil.ToFloat64(m.toolCalls.WithLabelValues("error")), 1},
		{"series", float64(testutil.CollectAndCount(m.requests)), 3},
		{"duration series", float64(testutil.CollectAndCount(m.requestDuration)), 2},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		m.request("tools/call", 200, time.Millisecond)
		m.toolCall("ok")
	}); n != 0 {
		t.Errorf("%.1f allocations per call's metrics, want 0", n)
	}
	var none *Metrics // no metrics configured: every method is a no-op
	none.request("tools/call", 200, time.Millisecond)
	none.toolCall("ok")
}
