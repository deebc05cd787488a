package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/pool"
)

// A 2026-07-28 worker's own input-required result, retried with a token that lacks a scope the
// worker was started with, is refused as the bridge's parked retry is
// (TestNarrowerGrantRefusedAtParkedRetry): 403 insufficient_scope naming the worker's scopes,
// the same text. It is not taken as a state whose worker has ended (400, "start again"),
// and no worker is started for it: the retry's token has its own worker key, and attaching to
// it started a second worker for a request refused the moment it ran.
func TestNarrowerGrantRefusedAtPassRetry(t *testing.T) {
	f := grantFixture(t, pool.PerUser, "statepass")
	admin, narrow, more := f.client("alice-admin"), f.client("alice-rw"), f.client("alice-more")
	r := admin.sessionless("2", "tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{}, "_meta": elicitingMeta()})
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(r.only(t).Result, &res); err != nil || res.ResultType != "input_required" || res.RequestState == "" {
		t.Fatalf("confirm: %s", r.body)
	}
	responses := map[string]any{}
	for k := range res.InputRequests {
		responses[k] = map[string]any{"action": "accept", "content": map[string]any{}}
	}
	started := func() int {
		n := 0
		for _, rec := range f.log.records(t) {
			if rec["msg"] == "worker started" {
				n++
			}
		}
		return n
	}
	before := started()
	retry := func(c *client, id string) reply {
		return c.sessionless(id, "tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{}, "_meta": elicitingMeta(),
			"inputResponses": responses, "requestState": res.RequestState})
	}
	checkGrantRefusal(t, "the retry lacking files:admin", retry(narrow, "3"))
	// A token granting more names another worker (the pool's key is the grant): refused too,
	// with what to do, before any worker is looked for.
	if r := retry(more, "33"); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "other scopes or audiences") {
		t.Errorf("the retry granting more: %d %s, want 400 naming the other grant", r.status, r.body)
	}
	if n := started() - before; n != 0 {
		t.Errorf("the refused retries started %d workers", n)
	}
	if r := retry(admin, "4"); r.status != http.StatusOK || r.only(t).Error != nil || toolText(t, r.only(t)) != "confirmed" {
		t.Errorf("the retry granting files:admin: %d %s", r.status, r.body)
	}
}
