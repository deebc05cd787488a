package gateway

import (
	"net/http"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessions"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// Every tools/call gets one audit line, allowed or refused, in either era (docs/operations.md):
// also one refused before its tool was weighed, by a drain, a full worker table or the
// session's call cap, with outcome refused and why.
func TestRefusedBeforeTheWorkerToolCallsAreAudited(t *testing.T) {
	call := map[string]any{"name": "whoami", "arguments": map[string]any{}}
	refused := func(t *testing.T, f *fixture, want int) {
		t.Helper()
		_, vals := auditLines(t, f)
		if len(vals) != want {
			t.Fatalf("%d audit lines, want %d:\n%s", len(vals), want, f.log.String())
		}
		last := vals[len(vals)-1]
		if last["outcome"] != "refused" || last["refused"] == "" || last["duration"] != float64(0) {
			t.Errorf("audit line %v: want outcome refused, why, duration 0", last)
		}
	}
	t.Run("2026-07-28, refused by the drain", func(t *testing.T) {
		f := newSessionlessFixture(t)
		f.gw.BeginDrain()
		if r := f.client("bob-rw").sessionless(`"d1"`, "tools/call", call); r.status != http.StatusServiceUnavailable {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		refused(t, f, 1)
	})
	t.Run("2026-07-28, max_workers reached", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.Pool = pool.Settings{WorkerPer: pool.PerUser, MaxWorkers: 1} })
		f.client("alice-rw").open()
		if r := f.client("bob-rw").sessionless(`"d1"`, "tools/call", call); r.status != http.StatusServiceUnavailable {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		refused(t, f, 1)
	})
	t.Run("session, max_calls_per_session reached", func(t *testing.T) {
		f := newFixture(t, func(o *Options) {
			o.Lifetime = sessions.DefaultLifetime()
			o.Lifetime.MaxCallsPerSession = 1
		})
		c := f.client("alice-rw")
		c.open()
		done := make(chan reply, 1)
		go func() { done <- c.callTool("10", "slow", map[string]any{"seconds": 1}) }()
		eventually(t, 5*time.Second, "a call in flight", func() bool {
			s := c.sessionObj()
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.calls) == 1
		})
		if r := c.callTool("12", "echo", map[string]any{"text": "x"}); r.status != http.StatusTooManyRequests {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		refused(t, f, 1) // the slow call's line comes when it ends
		<-done
		eventually(t, 5*time.Second, "the slow call's own audit line", func() bool {
			_, vals := auditLines(t, f)
			return len(vals) == 2
		})
	})
	t.Run("session, unknown session", func(t *testing.T) {
		f := newFixture(t)
		c := f.client("alice-rw")
		c.session, c.version = "no-such-session", "2025-06-18"
		if r := c.callTool("1", "echo", map[string]any{"text": "x"}); r.status != http.StatusNotFound {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		refused(t, f, 1)
	})
}

// A tools/call refused for the token's scopes before it reached a session is audited as
// forbidden, as the policy's refusals are.
func TestToolCallWithoutRequiredScopesIsAuditedForbidden(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		pol, err := policy.New(policy.Config{RequiredScopes: []string{"mcp:use", "mcp:admin"}, ReadOnlyTools: demoReadOnlyTools})
		if err != nil {
			t.Fatal(err)
		}
		o.Policy = pol
	})
	c := f.client("alice-rw")
	c.session, c.version = "any", "2025-06-18"
	if r := c.callTool("1", "echo", map[string]any{"text": "x"}); r.status != http.StatusForbidden {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	_, vals := auditLines(t, f)
	if len(vals) != 1 || vals[0]["outcome"] != "forbidden" {
		t.Fatalf("audit lines %v, want one with outcome forbidden", vals)
	}
}
