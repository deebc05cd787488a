package sessionless

import (
	"encoding/json"
	"strings"
	"testing"
)

// A sessionless worker's input-required result reaches the client with its requestState
// wrapped, never the worker's own: a client retrying with the worker's state would be refused,
// and the state is bound to the user only inside gemgate's. The client reads the result as
// encoding/json reads it into a struct (a key in another case is the same field, the last one
// wins), as resultTypeOf does for the audit outcome; wrapInputRequired looked for resultType
// and requestState by their exact names, so a result that spells one in another case went out
// as an input-required result (outcome input_required) with the worker's state unwrapped.
func TestWrapInputRequiredCaseVariantsNeverPassTheWorkersState(t *testing.T) {
	a := New(Config{})
	base := stateClaims{Issuer: "iss", Subject: "alice", Worker: "w0001", Method: "tools/call", Name: "ask"}
	for _, in := range []string{
		`{"ResultType":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{}}},"requestState":"worker-state"}`,
		`{"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{}}},"RequestState":"worker-state"}`,
		`{"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{}}},"requestState":"s","requeststate":"worker-state"}`,
		`{"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{}}},"requestſtate":"worker-state"}`,
	} {
		out, err := a.wrapInputRequired(base, json.RawMessage(in))
		if err != nil {
			continue // refused: the call gets an error, the worker's state goes nowhere
		}
		var client struct {
			ResultType   string `json:"resultType"`
			RequestState string `json:"requestState"`
		}
		if err := json.Unmarshal(out, &client); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if client.ResultType == "input_required" && !strings.HasPrefix(client.RequestState, statePrefix) {
			t.Errorf("%s\n passed on as %s: the client reads an input-required result with the worker's requestState %q", in, out, client.RequestState)
		}
		if got := resultTypeOf(out); got == "input_required" && strings.Contains(string(out), "worker-state") &&
			!strings.HasPrefix(client.RequestState, statePrefix) {
			t.Errorf("%s: audited as input_required with the worker's state unwrapped", in)
		}
	}
}

// FuzzWrapInputRequiredAsTheClientReads: whatever a sessionless worker's result, what gemgate
// passes on is read by the client (encoding/json into a struct: keys folded, the last one
// wins) as gemgate's audit reads it (resultTypeOf), and an input-required result the client
// reads carries gemgate's requestState, or none, never the worker's.
func FuzzWrapInputRequiredAsTheClientReads(f *testing.F) {
	for _, s := range []string{
		`{"resultType":"input_required","inputRequests":{"k":{}},"requestState":"worker-state"}`,
		`{"ResultType":"input_required","inputRequests":{"k":{}},"requestState":"worker-state"}`,
		`{"resultType":"input_required","inputRequests":{"k":{}},"RequestState":"worker-state"}`,
		`{"resultType":"input_required","inputRequests":{"k":{}},"requestState":"s","requeststate":"worker-state"}`,
		`{"resultType":"complete","resultType":"input_required","inputRequests":{},"requestState":"worker-state"}`,
		`{"resultType":"input_required","resultType":"complete","requestState":"worker-state"}`,
		`{"result\u0054ype":"input_required","inputRequests":{},"request\u0053tate":"worker-state"}`,
		`{"content":[],"resultType":"complete"}`,
	} {
		f.Add([]byte(s))
	}
	a := New(Config{})
	base := stateClaims{Issuer: "iss", Subject: "alice", Worker: "w0001", Method: "tools/call", Name: "ask"}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		out, err := a.wrapInputRequired(base, json.RawMessage(raw))
		if err != nil {
			return
		}
		var client struct {
			ResultType   *string `json:"resultType"`
			RequestState *string `json:"requestState"`
		}
		if json.Unmarshal(out, &client) != nil {
			return // the client refuses it as a whole
		}
		got := ""
		if client.ResultType != nil {
			got = *client.ResultType
		}
		if rt := resultTypeOf(out); rt != got {
			t.Fatalf("%s\n passed on as %s: audited as %q, read by the client as %q", raw, out, rt, got)
		}
		if got == "input_required" && client.RequestState != nil && *client.RequestState != "" && !strings.HasPrefix(*client.RequestState, statePrefix) {
			t.Fatalf("%s\n passed on as %s: the client reads the worker's requestState %q", raw, out, *client.RequestState)
		}
	})
}
