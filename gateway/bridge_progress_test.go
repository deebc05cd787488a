package gateway

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
)

// playAskProgress is the askprogress worker: its tool ask reports progress on the call's
// progress token and asks the client q1; once q1 is answered, it reports progress again, logs
// a line ("answered") and answers "done". Its tool list binds ask's region argument to the
// Mcp-Param-Region header (x-mcp-header).
func playAskProgress() int {
	var call, token json.RawMessage
	progress := func(w *scripted, n int) {
		if token != nil {
			w.out(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"total":2}}`, token, n)
		}
	}
	w := &scripted{name: "askprogress", caps: `{"tools":{}}`, tools: []string{"ask"}}
	w.handle = func(w *scripted, m *scriptedMsg) bool {
		switch {
		case m.Method == "tools/list":
			w.out(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"ask","inputSchema":{"type":"object",`+
				`"properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}]}}`, m.ID)
		case m.Method == "tools/call":
			call, token = m.ID, m.Params.Meta.ProgressToken
			progress(w, 1)
			w.elicit("q1", "go on?")
		case m.Method == "" && string(m.ID) == `"q1"` && call != nil:
			progress(w, 2)
			w.out(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"answered"}}`)
			w.text(call, "done")
			call, token = nil, nil
		default:
			return false
		}
		return true
	}
	return w.run()
}

// progressTokens are the progress tokens of r's progress notifications, in order, and
// whether r ends with an answer with id.
func progressTokens(r reply, id string) (tokens []string, answered bool) {
	for _, m := range r.msgs {
		switch {
		case m.Method == "notifications/progress":
			var p struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			}
			_ = json.Unmarshal(m.Params, &p)
			tokens = append(tokens, string(p.ProgressToken))
		case m.IsResponse():
			answered = string(m.ID) == id && m.Error == nil
		}
	}
	return tokens, answered
}

// The retry of a bridged call is a request of its own (2026-07-28: a new request, with its own
// id and _meta): what the worker reports of the call's progress before it asked reaches the
// first request, under its token, and what it reports after the client's answer reaches the
// retry under the retry's progressToken, or nowhere when the retry asked for none, as the answer
// carries the retry's id. The first request's token belongs to a request that is over, which
// the client may have given to another request since.
func TestBridgeRetrysProgressCarriesTheRetrysToken(t *testing.T) {
	f := newFixture(t, perUserMode(t, "askprogress"))
	c := f.client("alice-rw")
	meta := func(token string) map[string]any {
		m := sessionlessMeta()
		m[sessionless.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
		if token != "" {
			m["progressToken"] = token
		}
		return m
	}
	for _, tc := range []struct {
		retryToken string
		want       []string
	}{
		{"second", []string{`"second"`}},
		{"", nil},
	} {
		r := c.sessionless(`"ask"`, "tools/call", map[string]any{"name": "ask", "_meta": meta("first")})
		var res struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		}
		if err := json.Unmarshal(r.msgs[len(r.msgs)-1].Result, &res); err != nil || res.ResultType != "input_required" {
			t.Fatalf("ask: %s", r.body)
		}
		if got, _ := progressTokens(r, `"ask"`); !slices.Equal(got, []string{`"first"`}) {
			t.Errorf("the first request's progress tokens %v, want [\"first\"]\n%s", got, r.body)
		}
		responses := map[string]any{}
		for k := range res.InputRequests {
			responses[k] = map[string]any{"action": "accept", "content": map[string]any{}}
		}
		retry := c.sessionless(`"retry"`, "tools/call", map[string]any{"name": "ask", "_meta": meta(tc.retryToken),
			"inputResponses": responses, "requestState": res.RequestState})
		got, answered := progressTokens(retry, `"retry"`)
		if retry.status != http.StatusOK || !answered {
			t.Fatalf("retry: %d %s", retry.status, retry.body)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("a retry with progressToken %q: progress on its stream carries tokens %v, want %v\n%s", tc.retryToken, got, tc.want, retry.body)
		}
	}
}
