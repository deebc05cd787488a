package gateway

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/pool"
)

// auditStep is one tools/call and the audit outcome its one line and its count must name.
type auditStep struct {
	tool, outcome string
	call          func() reply
}

// auditedOnce runs each step and checks that it wrote exactly one audit line, naming its
// tool, its era and its outcome, and counted that outcome once in gemgate_tool_calls_total.
func auditedOnce(t *testing.T, f *fixture, era string, steps []auditStep) {
	t.Helper()
	lines := func() []map[string]any {
		var out []map[string]any
		for _, rec := range f.log.records(t) {
			if rec["msg"] == "audit tools/call" {
				out = append(out, rec)
			}
		}
		return out
	}
	counted := map[string]float64{}
	for i, st := range steps {
		// An error answer of the worker's may have its own status (SEP-2575): 400 here.
		if r := st.call(); r.status != http.StatusOK && !(st.outcome == "error" && r.status == http.StatusBadRequest) {
			t.Fatalf("%s: status %d: %s", st.tool, r.status, r.body)
		}
		eventually(t, 10*time.Second, "the audit line of "+st.tool, func() bool { return len(lines()) > i })
		got := lines()
		if len(got) != i+1 {
			t.Fatalf("%s: %d audit lines after %d calls: %v", st.tool, len(got), i+1, got)
		}
		l := got[i]
		if l["tool"] != st.tool || l["outcome"] != st.outcome || (era == "" && l["era"] != nil) || (era != "" && l["era"] != era) {
			t.Errorf("%s: audit line %v, want tool %s, outcome %s, era %q", st.tool, l, st.tool, st.outcome, era)
		}
		counted[st.outcome]++
		for outcome, n := range counted {
			if v := metricValue(t, f, "gemgate_tool_calls_total", "outcome", outcome); v != n {
				t.Errorf("after %s: tool_calls_total{outcome=%s} = %v, want %v", st.tool, outcome, v, n)
			}
		}
	}
	time.Sleep(100 * time.Millisecond) // a second line of the last call would be written by now
	if n := len(lines()); n != len(steps) {
		t.Errorf("%d audit lines for %d calls", n, len(steps))
	}
}

// elicitingMeta is _meta of a 2026-07-28 request that declares elicitation.
func elicitingMeta() map[string]any {
	meta := sessionlessMeta()
	meta[sessionless.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
	return meta
}

// parkDeleteNote has c write note n (request 1) and call delete_note on it (request 2) with
// elicitation declared; a worker of mode legacydemo asks to confirm, and the bridge parks the
// call. It returns the parked round's requestState and the inputResponses that accept.
func parkDeleteNote(t *testing.T, c *client) (state string, accept map[string]any) {
	t.Helper()
	if r := c.sessionless("1", "tools/call", map[string]any{"name": "write_note", "arguments": map[string]any{"name": "n", "text": "x"}}); r.only(t).Error != nil {
		t.Fatalf("write_note: %s", r.body)
	}
	r := c.sessionless("2", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": elicitingMeta()})
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(r.only(t).Result, &res); err != nil || res.ResultType != "input_required" || res.RequestState == "" {
		t.Fatalf("delete_note: %s", r.body)
	}
	accept = map[string]any{}
	for k := range res.InputRequests {
		accept[k] = map[string]any{"action": "accept", "content": map[string]any{}}
	}
	return res.RequestState, accept
}

// Every tools/call is audited and counted once, with the outcome of the answer its client
// got: ok, tool_error, error, and for a 2026-07-28 client input_required, whether the worker
// returned the input-required result itself (its requestState wrapped) or gemgate made it
// from a legacy worker's question (the bridge).
func TestToolCallAuditOutcomeInEachEra(t *testing.T) {
	t.Run("2026-07-28 worker", func(t *testing.T) {
		f := newSessionlessFixture(t)
		c := f.client("alice-rw")
		auditedOnce(t, f, sessionless.Version, []auditStep{
			{"echo", "ok", func() reply {
				return c.sessionless("1", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
			}},
			{"write_note", "ok", func() reply {
				return c.sessionless("2", "tools/call", map[string]any{"name": "write_note", "arguments": map[string]any{"name": "n", "text": "x"}})
			}},
			{"delete_note", "input_required", func() reply {
				return c.sessionless("3", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": elicitingMeta()})
			}},
			{"delete_note", "ok", func() reply {
				return c.sessionless("4", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": elicitingMeta(),
					"inputResponses": map[string]any{"confirm_delete": map[string]any{"action": "accept", "content": map[string]any{}}}})
			}},
			{"delete_note", "tool_error", func() reply { // no elicitation declared: the worker's tool error
				return c.sessionless("5", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}})
			}},
			{"no_such_tool", "error", func() reply {
				return c.sessionless("6", "tools/call", map[string]any{"name": "no_such_tool", "arguments": map[string]any{}})
			}},
		})
	})
	t.Run("legacy worker, bridged", func(t *testing.T) {
		f := newFixture(t, perUserMode(t, "legacydemo"))
		c := f.client("alice-rw")
		var parked struct {
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		}
		auditedOnce(t, f, sessionless.Version, []auditStep{
			{"echo", "ok", func() reply {
				return c.sessionless("1", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
			}},
			{"write_note", "ok", func() reply {
				return c.sessionless("2", "tools/call", map[string]any{"name": "write_note", "arguments": map[string]any{"name": "n", "text": "x"}})
			}},
			{"delete_note", "input_required", func() reply { // the worker's elicitation, bridged
				r := c.sessionless("3", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": elicitingMeta()})
				if err := json.Unmarshal(r.only(t).Result, &parked); err != nil || parked.RequestState == "" {
					t.Fatalf("delete_note: %s", r.body)
				}
				return r
			}},
			{"delete_note", "input_required", func() reply { // a retry that answers nothing: parked again
				r := c.sessionless("4", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": elicitingMeta(),
					"inputResponses": map[string]any{}, "requestState": parked.RequestState})
				if err := json.Unmarshal(r.only(t).Result, &parked); err != nil || parked.RequestState == "" || len(parked.InputRequests) == 0 {
					t.Fatalf("delete_note's empty retry: %s", r.body)
				}
				return r
			}},
			{"delete_note", "ok", func() reply { // the retry, which the tool's answer ends
				responses := map[string]any{}
				for k := range parked.InputRequests {
					responses[k] = map[string]any{"action": "accept", "content": map[string]any{}}
				}
				return c.sessionless("5", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": elicitingMeta(),
					"inputResponses": responses, "requestState": parked.RequestState})
			}},
			{"no_such_tool", "error", func() reply {
				return c.sessionless("6", "tools/call", map[string]any{"name": "no_such_tool", "arguments": map[string]any{}})
			}},
		})
	})
	t.Run("session", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.Pool = pool.Settings{WorkerPer: pool.PerUser} })
		c := f.client("alice-rw")
		c.open()
		auditedOnce(t, f, "", []auditStep{
			{"echo", "ok", func() reply { return c.callTool("1", "echo", map[string]any{"text": "hi"}) }},
			{"no_such_tool", "error", func() reply { return c.callTool("2", "no_such_tool", map[string]any{}) }},
		})
	})
}
