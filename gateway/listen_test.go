package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/gateway/limit"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/worker"
)

// panickingLauncher panics when asked for a worker.
type panickingLauncher struct{}

func (panickingLauncher) Launch(context.Context, worker.Identity) (worker.Launch, error) {
	panic("the launcher failed")
}

// TestListenPanicGivesBackItsSlot: a panic while a listen stream opens (here, in its worker's
// start) is answered 500 by the recoverer and leaves the user's listen slot free: seventeen
// such requests, one more than a user may hold open, all get the 500, none a 429 (a slot
// held by each would refuse the last).
func TestListenPanicGivesBackItsSlot(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.Workers = panickingLauncher{}
		o.Limits.WorkerStartRate = limit.None // each request starts the worker again
	})
	c := f.client("alice-rw")
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
		"params": map[string]any{"_meta": sessionlessMeta(), "notifications": map[string]any{"toolsListChanged": true}}})
	for n := range sessionless.MaxListensPerUser + 1 {
		r := c.post(string(body), sessionless.HeaderProtocolVersion, sessionless.Version, sessionless.HeaderMethod, "subscriptions/listen")
		if r.status != http.StatusInternalServerError {
			t.Fatalf("listen %d: status %d, want 500: %s", n, r.status, r.body)
		}
	}
}
