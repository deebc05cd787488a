package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/pool"
)

// A subscriptions/listen stream is the sessionless era's session stream: one POST that stays open
// for as long as its client listens. It, too, must not keep its bearer token reachable.
func TestListenStreamHoldsNoToken(t *testing.T) {
	f, tw := watchedFixture(t, func(o *Options) { o.Pool = pool.Settings{WorkerPer: pool.PerUser} })
	c := f.client(longToken)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "L1", "method": "subscriptions/listen",
		"params": map[string]any{"_meta": sessionlessMeta(), "notifications": map[string]any{"toolsListChanged": true}}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resp := c.postStreaming(ctx, string(body), sessionless.HeaderProtocolVersion, sessionless.Version, sessionless.HeaderMethod, "subscriptions/listen")
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("listen: %d", resp.StatusCode)
	}
	g := tw.nextGet(t)
	g.forgotten(t, "listen stream")
	// The stream still hears what it asked for.
	if r := c.sessionless("5", "tools/call", map[string]any{"name": "toggle_extra_tool", "arguments": map[string]any{}}); r.only(t).Error != nil {
		t.Fatalf("toggle: %s", r.body)
	}
	evs := readEvents(resp.Body)
	for _, want := range []string{"notifications/subscriptions/acknowledged", "notifications/tools/list_changed"} {
		ev, ok := nextEvent(t, evs)
		if !ok || !strings.Contains(ev.data, want) {
			t.Fatalf("listen stream: want %s, got %+v", want, ev)
		}
	}
	cancel()
	select {
	case <-g.returned:
	case <-time.After(10 * time.Second):
		t.Fatal("the listen stream outlived its client")
	}
}
