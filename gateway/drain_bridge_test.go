package gateway

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/pool"
)

// A parked 2026-07-28 call lives on this replica only, as a legacy session does: while the
// replica drains, its retry is work that belongs here and is served, whatever scopes beyond the
// parked worker's the retry's token grants (a token granting more is served outside the drain).
// Refused 503, the balancer sends the retry to another replica, which knows no parked call, and
// the client's answer to the worker's question is lost.
func TestDrainServesTheRetryOfAParkedCall(t *testing.T) {
	f := grantFixture(t, pool.PerUser, "legacydemo")
	rw, more := f.client("alice-rw"), f.client("alice-more")
	meta := func() map[string]any {
		m := sessionlessMeta()
		m[sessionless.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
		return m
	}
	if r := rw.sessionless("1", "tools/call", map[string]any{"name": "write_note", "arguments": map[string]any{"name": "n", "text": "x"}}); r.only(t).Error != nil {
		t.Fatalf("write_note: %s", r.body)
	}
	r := rw.sessionless("2", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": meta()})
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(r.only(t).Result, &res); err != nil || res.ResultType != "input_required" {
		t.Fatalf("delete_note: %s", r.body)
	}
	responses := map[string]any{}
	for k := range res.InputRequests {
		responses[k] = map[string]any{"action": "accept", "content": map[string]any{}}
	}
	f.gw.BeginDrain()
	retry := more.sessionless("3", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": meta(),
		"inputResponses": responses, "requestState": res.RequestState})
	if retry.status != http.StatusOK || retry.only(t).Error != nil || isToolError(retry.only(t).Result) {
		t.Fatalf("the retry of a call parked on this draining replica, with a token granting more: %d %s; want it served", retry.status, retry.body)
	}
}
