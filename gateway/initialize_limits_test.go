package gateway

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/gemgate/gemgate/gateway/limit"
)

// refusal checks an answer to initialize refused by a limit: status, Retry-After (and the
// same in the error's data), the request's own id, no session.
func refusal(t *testing.T, r reply, status int, id string) int {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || secs < 1 {
		t.Errorf("Retry-After %q, want whole seconds", r.header.Get("Retry-After"))
	}
	if r.header.Get(headerSessionID) != "" {
		t.Error("a refused initialize minted a session")
	}
	m := r.only(t)
	if string(m.ID) != id {
		t.Errorf("id %s, want the request's %s", m.ID, id)
	}
	e := rpcError(t, m)
	if data, _ := e.Data.(map[string]any); data["retryAfter"] != float64(secs) {
		t.Errorf("error data %v, want retryAfter %d", e.Data, secs)
	}
	return secs
}

// TestInitializeLimits: over the user's cap 429, over the gateway's 503, over the start rate
// 429 with the wait; each with Retry-After and the request's id.
func TestInitializeLimits(t *testing.T) {
	t.Run("per user", func(t *testing.T) {
		f := newFixture(t, func(o *Options) {
			o.Limits = limit.Settings{MaxSessions: 10, MaxSessionsPerUser: 1, WorkerStartRate: limit.None}
		})
		f.client("alice-rw").open()
		refusal(t, f.client("alice-ro").rpc(`"a-2"`, "initialize", initParams("2025-06-18")), http.StatusTooManyRequests, `"a-2"`)
		f.client("bob-rw").open()
		if got := metricValue(t, f, "gemgate_sessions_opened_total", "result", "limit"); got != 1 {
			t.Errorf("sessions refused for a limit = %v, want 1", got)
		}
	})
	t.Run("gateway", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.Limits = limit.Settings{MaxSessions: 1, WorkerStartRate: limit.None} })
		f.client("alice-rw").open()
		refusal(t, f.client("bob-rw").rpc(`7`, "initialize", initParams("2025-06-18")), http.StatusServiceUnavailable, `7`)
	})
	t.Run("start rate", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.Limits = limit.Settings{WorkerStartRate: 1.0 / 60, WorkerStartBurst: 1} })
		alice := f.client("alice-rw")
		alice.open()
		secs := refusal(t, f.client("alice-rw").rpc(`"r-2"`, "initialize", initParams("2025-06-18")), http.StatusTooManyRequests, `"r-2"`)
		if secs < 50 || secs > 60 {
			t.Errorf("Retry-After %d, want the minute until the next start", secs)
		}
		if got := metricValue(t, f, "gemgate_sessions_opened_total", "result", "rate"); got != 1 {
			t.Errorf("sessions refused for the rate = %v, want 1", got)
		}
		f.client("bob-rw").open() // bob has his own bucket, now spent
		// A malformed initialize is answered for what it is: it starts no worker, so the
		// rate is not consulted.
		if r := f.client("bob-rw").rpc(`1`, "initialize", nil); r.status != http.StatusOK || r.only(t).Error == nil {
			t.Errorf("malformed initialize: status %d, body %s", r.status, r.body)
		}
	})
	t.Run("shutting down", func(t *testing.T) {
		f := newFixture(t)
		f.gw.BeginShutdown()
		refusal(t, f.client("alice-rw").rpc(`"s-1"`, "initialize", initParams("2025-06-18")), http.StatusServiceUnavailable, `"s-1"`)
	})
}
