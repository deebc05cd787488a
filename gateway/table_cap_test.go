package gateway

import (
	"context"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/gateway/limit"
)

// TestPerUserCapHoldsAfterASessionEnds replays the cap over HTTP: max_sessions_per_user 2,
// the gateway's cap far off. Two sessions, one ended by DELETE, one more: the next is 429,
// and so is the one after another end and reopen.
func TestPerUserCapHoldsAfterASessionEnds(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Limits = limit.Settings{MaxSessions: 50, MaxSessionsPerUser: 2, WorkerStartRate: limit.None}
	})
	a, b := f.client("alice-rw"), f.client("alice-rw")
	a.open()
	b.open()
	refusal(t, f.client("alice-rw").rpc(`"over-1"`, "initialize", initParams("2025-06-18")), http.StatusTooManyRequests, `"over-1"`)
	for round := range 2 {
		if r := a.request(context.Background(), http.MethodDelete, ""); r.status != http.StatusOK {
			t.Fatalf("round %d: DELETE: status %d", round, r.status)
		}
		a = f.client("alice-rw")
		a.open() // the slot the ended session gave back
		r := f.client("alice-rw").rpc(`"over-2"`, "initialize", initParams("2025-06-18"))
		if r.status != http.StatusTooManyRequests {
			t.Fatalf("round %d: alice holds 2 sessions at a cap of 2 after one of them ended, and a 3rd initialize got %d, want 429: the cap forgot the session still open", round, r.status)
		}
		refusal(t, r, http.StatusTooManyRequests, `"over-2"`)
	}
	if n := f.gw.sessions.Len(); n != 2 {
		t.Errorf("%d sessions open, want 2", n)
	}
	// Another user is not counted against alice.
	f.client("bob-rw").open()
}
