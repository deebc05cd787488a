package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/policy"
)

// A retry of a bridged call is a request of its own, and what the worker asks next is put to it
// by its own declaration (_meta clientCapabilities), not the first request's: a retry that
// declares no elicitation is not asked the worker's next elicitation/create. The question is
// refused to the worker and the retry gets MissingRequiredClientCapability, as a first request
// that declared none would.
func TestBridgeRetryIsAskedByItsOwnDeclaration(t *testing.T) {
	f := newFixture(t, perUserMode(t, "askagain"))
	c := f.client("alice-rw")
	meta := func(caps map[string]any) map[string]any {
		m := sessionlessMeta()
		m[sessionless.MetaClientCapabilities] = caps
		return m
	}
	r := c.sessionless(`"1"`, "tools/call", map[string]any{"name": "ask",
		"_meta": meta(map[string]any{"elicitation": map[string]any{}})})
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(r.only(t).Result, &res); err != nil || res.ResultType != "input_required" {
		t.Fatalf("ask: %s", r.body)
	}
	responses := map[string]any{}
	for k := range res.InputRequests {
		responses[k] = map[string]any{"action": "accept", "content": map[string]any{}}
	}
	retry := c.sessionless(`"2"`, "tools/call", map[string]any{"name": "ask", "_meta": meta(map[string]any{}),
		"inputResponses": responses, "requestState": res.RequestState})
	if retry.status != http.StatusBadRequest || len(retry.msgs) != 1 || retry.msgs[0].Error == nil {
		t.Fatalf("a retry declaring no elicitation, whose worker asks for one: %d %s; want 400 MissingRequiredClientCapability", retry.status, retry.body)
	}
	if e := rpcError(t, retry.msgs[0]); e.Code != sessionless.CodeMissingCapability {
		t.Errorf("error %d %q, want %d", e.Code, e.Message, sessionless.CodeMissingCapability)
	}
}

// A retry of a bridged call gets the worker's log lines by its own _meta logLevel, not the first
// request's: a retry that names none gets no log line, as any request without one, and one that
// names a more severe level than the line's gets none either.
func TestBridgeRetryGetsLogLinesByItsOwnLevel(t *testing.T) {
	f := newFixture(t, perUserMode(t, "askprogress"))
	c := f.client("alice-rw")
	meta := func(level string) map[string]any {
		m := sessionlessMeta()
		m[sessionless.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
		if level != "" {
			m[sessionless.MetaLogLevel] = level
		}
		return m
	}
	for _, tc := range []struct {
		first, retry string
		logged       bool // the worker's info line
	}{{"info", "", false}, {"", "info", true}, {"debug", "error", false}} {
		r := c.sessionless(`"1"`, "tools/call", map[string]any{"name": "ask", "_meta": meta(tc.first)})
		var res struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		}
		if err := json.Unmarshal(r.msgs[len(r.msgs)-1].Result, &res); err != nil || res.ResultType != "input_required" {
			t.Fatalf("ask: %s", r.body)
		}
		responses := map[string]any{}
		for k := range res.InputRequests {
			responses[k] = map[string]any{"action": "accept", "content": map[string]any{}}
		}
		retry := c.sessionless(`"2"`, "tools/call", map[string]any{"name": "ask", "_meta": meta(tc.retry),
			"inputResponses": responses, "requestState": res.RequestState})
		if retry.status != http.StatusOK {
			t.Fatalf("retry: %d %s", retry.status, retry.body)
		}
		logged := false
		for _, m := range retry.msgs {
			logged = logged || m.Method == "notifications/message"
		}
		if logged != tc.logged {
			t.Errorf("first request's logLevel %q, the retry's %q: the retry got the worker's info line: %v, want %v\n%s",
				tc.first, tc.retry, logged, tc.logged, retry.body)
		}
	}
}

// A retry of a bridged call is checked as every 2026-07-28 tools/call is: an Mcp-Param-*
// header bound by the tool's x-mcp-header that does not mirror the retry's argument is refused
// (400, -32020), as the first request's would be, and the call stays parked for a retry that
// mirrors it.
func TestBridgeRetryParamHeaderMirrorsItsBody(t *testing.T) {
	f := newFixture(t, perUserMode(t, "askprogress"))
	c := f.client("alice-rw")
	meta := sessionlessMeta()
	meta[sessionless.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
	args := map[string]any{"region": "eu"}
	r := c.sessionless(`"1"`, "tools/call", map[string]any{"name": "ask", "arguments": args, "_meta": meta}, "Mcp-Param-Region", "eu")
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(r.msgs[len(r.msgs)-1].Result, &res); err != nil || res.ResultType != "input_required" {
		t.Fatalf("ask: %d %s", r.status, r.body)
	}
	responses := map[string]any{}
	for k := range res.InputRequests {
		responses[k] = map[string]any{"action": "accept", "content": map[string]any{}}
	}
	retry := func(id, region string) reply {
		return c.sessionless(id, "tools/call", map[string]any{"name": "ask", "arguments": args, "_meta": meta,
			"inputResponses": responses, "requestState": res.RequestState}, "Mcp-Param-Region", region)
	}
	if r := retry(`"2"`, "us"); r.status != http.StatusBadRequest || len(r.msgs) != 1 || rpcError(t, r.msgs[0]).Code != sessionless.CodeHeaderMismatch {
		t.Fatalf("a retry whose Mcp-Param-Region says us and whose region argument eu: %d %s; want 400, %d", r.status, r.body, sessionless.CodeHeaderMismatch)
	}
	if r := retry(`"3"`, "eu"); r.status != http.StatusOK || r.msgs[len(r.msgs)-1].Error != nil {
		t.Errorf("the mirroring retry after the refused one: %d %s; want the call's answer", r.status, r.body)
	}
}

// A retry of a parked call is an answer to the worker's question, refused and allowed as a
// session's answer is (DESIGN §9, invariants 10 and 11): a read-only token's retry of a call
// parked on a read-write worker gets the 2025-x era's 403 insufficient_scope naming the write
// scope, with its text, so that the client can authorize again; a read-write token's retry
// of a call parked on a read-only worker is served, as its answer in a session is.
func TestBridgeRetryOfAnotherAccessModeIsAnsweredAsInASession(t *testing.T) {
	f := newFixture(t, perUserMode(t, "askagain"), func(o *Options) {
		pol, err := policy.New(policy.Config{ReadOnlyTools: append([]string{"ask"}, demoReadOnlyTools...)})
		if err != nil {
			t.Fatal(err)
		}
		o.Policy = pol
	})
	meta := func() map[string]any {
		m := sessionlessMeta()
		m[sessionless.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
		return m
	}
	park := func(c *client, id string) (state string, responses map[string]any) {
		r := c.sessionless(id, "tools/call", map[string]any{"name": "ask", "_meta": meta()})
		var res struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		}
		if err := json.Unmarshal(r.only(t).Result, &res); err != nil || res.ResultType != "input_required" {
			t.Fatalf("ask: %s", r.body)
		}
		responses = map[string]any{}
		for k := range res.InputRequests {
			responses[k] = map[string]any{"action": "accept", "content": map[string]any{}}
		}
		return res.RequestState, responses
	}
	rw, ro := f.client("alice-rw"), f.client("alice-ro")

	state, responses := park(rw, `"1"`)
	retry := ro.sessionless(`"2"`, "tools/call", map[string]any{"name": "ask", "_meta": meta(),
		"inputResponses": responses, "requestState": state})
	ch := retry.header.Get("WWW-Authenticate")
	if retry.status != http.StatusForbidden || !strings.Contains(ch, "insufficient_scope") || !strings.Contains(ch, "mcp:write") ||
		!strings.Contains(string(retry.body), "the worker that asked is read-write and this token may only read") {
		t.Errorf("a read-only token's retry of a read-write parked call: %d %q %s; want the 2025-x era's 403 insufficient_scope naming mcp:write", retry.status, ch, retry.body)
	}

	state, responses = park(ro, `"3"`)
	retry = rw.sessionless(`"4"`, "tools/call", map[string]any{"name": "ask", "_meta": meta(),
		"inputResponses": responses, "requestState": state})
	if retry.status != http.StatusOK || len(retry.msgs) != 1 || retry.msgs[0].Error != nil {
		t.Errorf("a read-write token's retry of a read-only parked call: %d %s; want it served", retry.status, retry.body)
	}
}
