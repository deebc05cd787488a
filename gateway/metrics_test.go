package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessions"
)

func TestMetricsCountSessionsCallsAndRequests(t *testing.T) {
	f := newFixture(t)
	a := f.client("alice-rw")
	a.open()
	b := f.client("alice-ro")
	b.open()
	ids := []string{a.session, b.session}

	a.callTool("2", "echo", map[string]any{"text": "x"})
	a.callTool("3", "read_note", map[string]any{"name": "missing"}) // a tool error
	b.callTool("4", "write_note", map[string]any{"name": "n", "text": "x"})
	a.post(`{"jsonrpc":"2.0","id":5,`)
	a.rpc("6", "vendor/secret-method-"+a.session, map[string]any{})
	a.request(context.Background(), http.MethodDelete, "")

	checks := []struct {
		name string
		got  float64
		want float64
	}{
		{"sessions opened ok", metricValue(t, f, "gemgate_sessions_opened_total", "result", "ok"), 2},
		{"sessions open", metricValue(t, f, "gemgate_sessions_open"), 1},
		{"sessions closed deleted", metricValue(t, f, "gemgate_sessions_closed_total", "reason", sessions.ReasonDeleted), 1},
		{"workers running", waitMetric(t, f, 1, "gemgate_workers_running", "mode", "read_only"), 1},
		{"worker stopped by the gateway", waitMetric(t, f, 1, "gemgate_worker_exits_total", "result", "stopped"), 1},
		{"worker exited on its own", metricValue(t, f, "gemgate_worker_exits_total", "result", "exited"), 0},
		{"tool call ok", metricValue(t, f, "gemgate_tool_calls_total", "outcome", "ok"), 1},
		{"tool call tool_error", metricValue(t, f, "gemgate_tool_calls_total", "outcome", "tool_error"), 1},
		{"tool call readOnly", metricValue(t, f, "gemgate_tool_calls_total", "outcome", "readOnly"), 1},
		{"initialize 200", metricValue(t, f, "gemgate_requests_total", "code", "200", "method", "initialize"), 2},
		{"initialized 202", metricValue(t, f, "gemgate_requests_total", "code", "202", "method", "notifications/initialized"), 2},
		{"tools/call 200", metricValue(t, f, "gemgate_requests_total", "code", "200", "method", "tools/call"), 2},
		{"tools/call 403", metricValue(t, f, "gemgate_requests_total", "code", "403", "method", "tools/call"), 1},
		{"parse error", metricValue(t, f, "gemgate_requests_total", "code", "400", "method", "other"), 1},
		{"unknown method", metricValue(t, f, "gemgate_requests_total", "code", "200", "method", "other"), 1},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if n := metricValue(t, f, "gemgate_worker_start_seconds"); n != 2 {
		t.Errorf("worker start histogram has %v samples, want 2", n)
	}

	// No label value holds a session id, a user, a subject or a client-chosen name.
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	forbidden := append(ids, "alice", "sub-alice", "secret-method", "read_note", "write_note", "echo")
	for _, mf := range mfs {
		for _, metric := range mf.GetMetric() {
			for _, lp := range metric.GetLabel() {
				for _, bad := range forbidden {
					if strings.Contains(lp.GetValue(), bad) {
						t.Errorf("%s{%s=%q} holds %q", mf.GetName(), lp.GetName(), lp.GetValue(), bad)
					}
				}
			}
		}
	}
}

func TestMetricsWorkerExitAndLimits(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Workers = &testLauncher{mode: "crashy"}
		o.Lifetime = sessions.DefaultLifetime()
		o.Limits.MaxSessionsPerUser = 1
	})
	c := f.client("alice-rw")
	c.open()
	if r := f.client("alice-rw").rpc("1", "initialize", initParams("2025-06-18")); r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
		t.Errorf("second session over the per-user limit: status %d, Retry-After %q", r.status, r.header.Get("Retry-After"))
	}
	c.callTool("2", "boom", map[string]any{})
	eventually(t, 5*time.Second, "the session to end", func() bool { return f.gw.Sessions() == 0 })
	eventually(t, 2*time.Second, "the exit to be counted", func() bool {
		return metricValue(t, f, "gemgate_worker_exits_total", "result", "exited") == 1
	})
	for name, got := range map[string]float64{
		"closed worker_exit": waitMetric(t, f, 1, "gemgate_sessions_closed_total", "reason", sessions.ReasonWorkerExit),
		"opened limit":       metricValue(t, f, "gemgate_sessions_opened_total", "result", "limit"),
		"opened ok":          metricValue(t, f, "gemgate_sessions_opened_total", "result", "ok"),
	} {
		if got != 1 {
			t.Errorf("%s = %v, want 1", name, got)
		}
	}
	if got := metricValue(t, f, "gemgate_workers_running", "mode", "read_write"); got != 0 {
		t.Errorf("workers running = %v", got)
	}
	// The slot is free again.
	f.client("alice-rw").open()
}

func TestNilMetricsAndTracerAreSafe(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Metrics, o.Trace = nil, nil })
	c := f.client("alice-rw")
	c.open()
	if r := c.callTool("2", "echo", map[string]any{"text": "x"}); toolText(t, r.only(t)) != "x" {
		t.Error("echo failed without metrics")
	}
	if r := f.client("").rpc("3", "ping", map[string]any{}); r.status != http.StatusUnauthorized {
		t.Errorf("no token: %d", r.status)
	}
}
