package gateway

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gemgate/gemgate/gateway/sessions"
)

// The counters move on the right events, read with client_golang's testutil, and the whole
// family set passes its linter (names, help, units).
func TestMetricsWithTestutil(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.sessionOpened("ok")
	m.sessionOpened("ok")
	m.sessionClosed(sessions.ReasonIdle)
	m.toolCall("readOnly")
	m.request("tools/call", 403, 0)

	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"sessions open", testutil.ToFloat64(m.sessionsOpen), 1},
		{"sessions opened ok", testutil.ToFloat64(m.sessionsOpened.WithLabelValues("ok")), 2},
		{"sessions closed idle", testutil.ToFloat64(m.sessionsClosed.WithLabelValues(sessions.ReasonIdle)), 1},
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
