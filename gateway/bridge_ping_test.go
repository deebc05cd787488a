package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
)

// A worker's ping (a go-sdk server with KeepAlive pings its client, and closes the session
// when pings fail other than "method not found") asks nobody anything: 2026-07-28 has no input
// request for it. Within a sessionless call it must not become the call's input-required
// result, which no client can answer: the call would wait there until input_required_timeout,
// and the ping would fail with an internal error. gemgate, the worker's client, answers it as
// it answers a ping nobody can take (-32601), and the call goes on.
func TestSessionlessWorkerPingIsNotAnInputRequest(t *testing.T) {
	f := newFixture(t, perUserMode(t, "pinger"))
	c := f.client("alice-rw")
	r := c.sessionless("1", "tools/call", map[string]any{"name": "ping", "arguments": map[string]any{}, "_meta": elicitingMeta()})
	m := r.only(t)
	var res struct {
		ResultType string `json:"resultType"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.ResultType == "input_required" {
		t.Fatalf("a call whose worker pinged: %d %s, want the call's own answer", r.status, r.body)
	}
	if got := toolText(t, m); !strings.Contains(got, "-32601") {
		t.Errorf("the worker's ping was answered %q, want gemgate's -32601", got)
	}
}

// A legacy worker's request without params (roots/list needs none) is put to the client as an
// input request without params: "params": null is no object, and a client that checks the
// input request's shape (params, when present, an object) refuses the whole result.
func TestSessionlessInputRequestWithoutParamsHasNoNullParams(t *testing.T) {
	f := newFixture(t, perUserMode(t, "pinger"))
	c := f.client("alice-rw")
	meta := sessionlessMeta()
	meta[sessionless.MetaClientCapabilities] = map[string]any{"roots": map[string]any{}}
	r := c.sessionless("1", "tools/call", map[string]any{"name": "roots", "arguments": map[string]any{}, "_meta": meta})
	var res struct {
		ResultType    string                                `json:"resultType"`
		InputRequests map[string]map[string]json.RawMessage `json:"inputRequests"`
	}
	if m := r.only(t); m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.ResultType != "input_required" || len(res.InputRequests) != 1 {
		t.Fatalf("roots: %d %s, want its roots/list as an input-required result", r.status, r.body)
	}
	for key, req := range res.InputRequests {
		if p, ok := req["params"]; ok && (len(p) == 0 || p[0] != '{') {
			t.Errorf("input request %s has params %s, want an object or none", key, p)
		}
	}
}
