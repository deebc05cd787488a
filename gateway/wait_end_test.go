package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/gateway/sessions"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/telemetry"
)

// A tools/call the wait ends without the worker's answer (the request timeout, the client's
// notifications/cancelled, the client gone, its worker's exit) is ended once, in either era: one audit line and
// one count with the outcome of the wait, the trace id of its request, and its round trip span
// ended once with that outcome.
func TestWaitEndsAnUnansweredCallOnce(t *testing.T) {
	slowArgs := map[string]any{"seconds": 30}
	for _, tc := range []struct {
		name, outcome, era string
		call               func(t *testing.T, c *client)
	}{
		{"session timeout", "timeout", "", func(t *testing.T, c *client) {
			c.open()
			if m := c.callTool("7", "slow", slowArgs).only(t); m.Error == nil {
				t.Fatalf("slow answered before the request timeout: %s", m.Result)
			}
		}},
		{"sessionless timeout", "timeout", sessionless.Version, func(t *testing.T, c *client) {
			if m := c.sessionless("7", "tools/call", map[string]any{"name": "slow", "arguments": slowArgs}).only(t); m.Error == nil {
				t.Fatalf("slow answered before the request timeout: %s", m.Result)
			}
		}},
		{"session cancelled", "cancelled", "", func(t *testing.T, c *client) {
			c.open()
			done := make(chan reply, 1)
			go func() {
				r, _ := c.do(context.Background(), http.MethodPost, rpcBody("7", "tools/call", map[string]any{"name": "slow", "arguments": slowArgs}))
				done <- r
			}()
			eventually(t, 10*time.Second, "the call in flight", func() bool { s := c.sessionObj(); return s != nil && s.inCall() })
			if r := c.rpc("", "notifications/cancelled", map[string]any{"requestId": 7}); r.status != http.StatusAccepted {
				t.Fatalf("notifications/cancelled: %d %s", r.status, r.body)
			}
			if r := <-done; r.status != http.StatusAccepted {
				t.Errorf("the cancelled call's POST: %d %s, want 202", r.status, r.body)
			}
		}},
		{"session client gone", "disconnected", "", func(t *testing.T, c *client) {
			c.open()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = c.do(ctx, http.MethodPost, rpcBody("7", "tools/call", map[string]any{"name": "slow", "arguments": slowArgs}))
			}()
			eventually(t, 10*time.Second, "the call in flight", func() bool { s := c.sessionObj(); return s != nil && s.inCall() })
			cancel()
			<-done
		}},
		{"session worker exit", "error", "", func(t *testing.T, c *client) {
			c.open()
			done := make(chan reply, 1)
			go func() {
				r, _ := c.do(context.Background(), http.MethodPost, rpcBody("7", "tools/call", map[string]any{"name": "slow", "arguments": slowArgs}))
				done <- r
			}()
			eventually(t, 10*time.Second, "the call in flight", func() bool { s := c.sessionObj(); return s != nil && s.inCall() })
			if err := syscall.Kill(c.sessionObj().member.WorkerPid(), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if r := <-done; r.status != http.StatusOK || len(r.msgs) != 1 || r.msgs[0].Error == nil {
				t.Errorf("the call whose worker died: %d %s, want a JSON-RPC error", r.status, r.body)
			}
		}},
		{"sessionless worker exit", "error", sessionless.Version, func(t *testing.T, c *client) {
			done := make(chan reply, 1)
			go func() {
				body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
					"params": map[string]any{"name": "slow", "arguments": slowArgs, "_meta": sessionlessMeta()}})
				r, _ := c.do(context.Background(), http.MethodPost, string(body), sessionless.HeaderProtocolVersion, sessionless.Version,
					sessionless.HeaderMethod, "tools/call", sessionless.HeaderName, "slow")
				done <- r
			}()
			pid := 0
			eventually(t, 10*time.Second, "the call to reach the worker", func() bool {
				reached := false
				for _, rec := range c.f.log.records(t) {
					if rec["direction"] == "to_worker" && strings.Contains(fmt.Sprint(rec["body"]), `"slow"`) {
						reached = true
					}
					if rec["msg"] == "worker started" && rec["sessionless"] == true {
						pid = int(rec["pid"].(float64))
					}
				}
				return reached && pid != 0
			})
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if r := <-done; r.status != http.StatusOK || len(r.msgs) != 1 || r.msgs[0].Error == nil {
				t.Errorf("the call whose worker died: %d %s, want a JSON-RPC error", r.status, r.body)
			}
		}},
		{"sessionless client gone", "cancelled", sessionless.Version, func(t *testing.T, c *client) {
			meta := sessionlessMeta()
			meta["progressToken"] = "p"
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
				"params": map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 30, "progress": true}, "_meta": meta}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp := c.postStreaming(ctx, string(body), sessionless.HeaderProtocolVersion, sessionless.Version,
				sessionless.HeaderMethod, "tools/call", sessionless.HeaderName, "slow")
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() && !strings.HasPrefix(sc.Text(), "data:") { // the first progress: the call waits
			}
			cancel()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
			f := newFixture(t, func(o *Options) {
				o.Pool = pool.Settings{WorkerPer: pool.PerUser}
				o.Tracing = telemetry.NewWith(tp, telemetry.Settings{})
				o.Lifetime = sessions.DefaultLifetime()
				if strings.HasSuffix(tc.name, "timeout") {
					o.Lifetime.RequestTimeout = 300 * time.Millisecond
				}
			})
			tc.call(t, f.client("alice-rw"))
			var server sdktrace.ReadOnlySpan
			eventually(t, 10*time.Second, "the call's server span", func() bool {
				for _, s := range spansNamed(rec, "tools/call slow") {
					if s.SpanKind() == trace.SpanKindServer {
						server = s
					}
				}
				return server != nil
			})
			time.Sleep(100 * time.Millisecond) // a late second line would be written by now
			rt := oneSpan(t, rec, "tools/call slow", trace.SpanKindClient, server)
			if got := attrs(rt)["gemgate.outcome"]; got != tc.outcome {
				t.Errorf("round trip span outcome %q, want %q", got, tc.outcome)
			}
			if got := attrs(server)["gemgate.outcome"]; got != tc.outcome {
				t.Errorf("server span outcome %q, want %q", got, tc.outcome)
			}
			var lines []map[string]any
			for _, rec := range f.log.records(t) {
				if rec["msg"] == "audit tools/call" {
					lines = append(lines, rec)
				}
			}
			if len(lines) != 1 {
				t.Fatalf("%d audit lines, want 1: %v", len(lines), lines)
			}
			l := lines[0]
			if l["tool"] != "slow" || l["outcome"] != tc.outcome || l["trace_id"] != server.SpanContext().TraceID().String() ||
				(tc.era == "" && l["era"] != nil) || (tc.era != "" && l["era"] != tc.era) {
				t.Errorf("audit line %v, want tool slow, outcome %s, era %q, trace_id %s", l, tc.outcome, tc.era, server.SpanContext().TraceID())
			}
			if v := metricValue(t, f, "gemgate_tool_calls_total", "outcome", tc.outcome); v != 1 {
				t.Errorf("tool_calls_total{outcome=%s} = %v, want 1", tc.outcome, v)
			}
		})
	}
}
