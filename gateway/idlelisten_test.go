//go:build !race

package gateway

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/internal/stacktest"
)

// idleListenOpener returns a function that opens a subscriptions/listen stream over a raw
// connection, with the token it is given, and returns once its acknowledgement has come: its
// handler is about to wait.
func idleListenOpener(t *testing.T) func(token string) {
	f := idleStreamFixture(t)
	n := 0
	return func(token string) {
		n++
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "L" + strconv.Itoa(n), "method": "subscriptions/listen",
			"params": map[string]any{"_meta": sessionlessMeta(), "notifications": map[string]any{"toolsListChanged": true}}})
		resp := dialRawAs(t, f, token).send(http.MethodPost, "", string(body), sessionless.HeaderProtocolVersion, sessionless.Version, sessionless.HeaderMethod, "subscriptions/listen")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("listen: %d", resp.StatusCode)
		}
		rd := bufio.NewReader(resp.Body)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("listen stream ended before its acknowledgement: %v", err)
			}
			if strings.HasPrefix(line, "data: ") {
				if !strings.Contains(line, "notifications/subscriptions/acknowledged") {
					t.Fatalf("listen stream's first message %q", line)
				}
				return
			}
		}
	}
}

// TestIdleListenStackNeverDoubles is TestIdleStreamStackNeverDoubles for the 2026-07-28
// era's idle stream: opening a subscriptions/listen stream (the era's checks, the attach to
// the user's worker, the stream's first write) never grows the connection's goroutine past
// the 8 KiB its wait keeps. A user may hold sessionless.MaxListensPerUser listen streams: four users'
// are measured, after a first of each has started their workers.
func TestIdleListenStackNeverDoubles(t *testing.T) {
	open := idleListenOpener(t)
	users := []string{"alice-rw", "bob-rw", "carol-rw", "dave-rw"}
	for _, u := range users {
		open(u) // the user's worker, and everything made once, before the measure
	}
	per := sessionless.MaxListensPerUser - 1
	n := 0
	step := func() { open(users[n/per]); n++ }
	perStream, startSize := stacktest.PerCall(len(users)*per, step)
	limit := float64(max(8<<10, startSize) + startSize + 1<<10)
	t.Logf("goroutine stacks per listen stream, nothing halved: %.0f B (starting size %d B)", perStream, startSize)
	if perStream > limit {
		t.Errorf("a listen stream holds %.0f B of goroutine stacks before any collection; want at most %.0f "+
			"(its handler's 8 KiB and a reader's %d B): opening it grew the connection's goroutine", perStream, limit, startSize)
	}
}
