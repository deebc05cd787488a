package metrics

import (
	"strings"
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
	m := New(reg)
	for range 3 {
		m.Request("tools/call", 200, time.Millisecond, "")
		m.ToolCall("ok")
	}
	m.Request("tools/call", 429, time.Millisecond, "")
	m.Request("ping", 200, time.Millisecond, "")
	m.ToolCall("error")
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
		m.Request("tools/call", 200, time.Millisecond, "")
		m.ToolCall("ok")
	}); n != 0 {
		t.Errorf("%.1f allocations per call's metrics, want 0", n)
	}
	var none *Metrics // no metrics configured: every method is a no-op
	none.Request("tools/call", 200, time.Millisecond, "")
	none.ToolCall("ok")
}

// The counters move on the right events, read with client_golang's testutil, and the whole
// family set passes its linter (names, help, units).
func TestMetricsWithTestutil(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.SessionOpened("ok")
	m.SessionOpened("ok")
	m.SessionClosed("idle")
	m.ToolCall("readOnly")
	m.Request("tools/call", 403, 0, "")

	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"sessions open", testutil.ToFloat64(m.sessionsOpen), 1},
		{"sessions opened ok", testutil.ToFloat64(m.sessionsOpened.WithLabelValues("ok")), 2},
		{"sessions closed idle", testutil.ToFloat64(m.sessionsClosed.WithLabelValues("idle")), 1},
		{"tool calls readOnly", testutil.ToFloat64(m.toolCalls.WithLabelValues("readOnly")), 1},
		{"requests tools/call 403", testutil.ToFloat64(m.requests.WithLabelValues("tools/call", "403")), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if !strings.HasPrefix(p.Metric, "gemgate_") {
			continue
		}
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}
