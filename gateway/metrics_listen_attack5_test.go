package gateway

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
)

// subscriptions/listen, the 2026-07-28 era's own stream (its answer may last hours), is
// counted under its own method label, as server/discover is: lumped in with "other", its
// durations would drown the histogram of parse errors and unknown methods, and the listens
// themselves could not be counted.
func TestMetricsCountListenUnderItsMethod(t *testing.T) {
	f := newSessionlessFixture(t)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
		"params": map[string]any{"_meta": sessionlessMeta(), "notifications": map[string]any{}}})
	// Nothing asked for: the stream is acknowledged and ends with the request's result.
	r := f.client("alice-rw").post(string(body), sessionless.HeaderProtocolVersion, sessionless.Version, sessionless.HeaderMethod, "subscriptions/listen")
	if r.status != http.StatusOK {
		t.Fatalf("listen: %d %s", r.status, r.body)
	}
	if got := metricValue(t, f, "gemgate_requests_total", "code", "200", "method", "subscriptions/listen"); got != 1 {
		t.Errorf("gemgate_requests_total{method=subscriptions/listen} = %v, want 1 (other: %v)", got,
			metricValue(t, f, "gemgate_requests_total", "code", "200", "method", "other"))
	}
}
