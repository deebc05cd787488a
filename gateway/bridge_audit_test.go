package gateway

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/telemetry"
)

// A tools/call through the bridge is audited and counted each round, as a 2026-07-28 worker's
// is: the round that parked it (input_required), then the client's retry, which the tool's
// answer ends (ok), each line with its own request's trace id. There is one round trip span,
// the parked round's: the retry sends the worker no call of its own.
func TestBridgedCallIsAuditedEachRound(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	f := newFixture(t, perUserMode(t, "legacydemo"), func(o *Options) {
		o.Tracing = telemetry.NewWith(tp, telemetry.Settings{})
	})
	c := f.client("alice-rw")
	state, responses := parkDeleteNote(t, c)
	r := c.sessionless("3", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": elicitingMeta(),
		"inputResponses": responses, "requestState": state})
	if m := r.only(t); m.Error != nil || isToolError(m.Result) {
		t.Fatalf("retry: %s", r.body)
	}
	// Both requests' SERVER spans end after their handler (and its audit line).
	eventually(t, 5*time.Second, "the retry's server span", func() bool {
		n := 0
		for _, s := range spansNamed(rec, "tools/call delete_note") {
			if s.SpanKind() == trace.SpanKindServer {
				n++
			}
		}
		return n == 2
	})
	// A server span ends after its handler, and so after the handler's audit line.
	var first, retry sdktrace.ReadOnlySpan
	for _, s := range spansNamed(rec, "tools/call delete_note") {
		if s.SpanKind() == trace.SpanKindServer && attrs(s)["jsonrpc.request.id"] == "2" {
			first = s
		}
		if s.SpanKind() == trace.SpanKindServer && attrs(s)["jsonrpc.request.id"] == "3" {
			retry = s
		}
	}
	if first == nil || retry == nil {
		t.Fatal("no server span of the parked round or of the retry")
	}
	rt := oneSpan(t, rec, "tools/call delete_note", trace.SpanKindClient, nil)
	if rt.Parent().SpanID() != first.SpanContext().SpanID() || attrs(rt)["gemgate.outcome"] != "input_required" {
		t.Errorf("round trip span %v under %v, want the parked round's, outcome input_required", attrs(rt), rt.Parent().SpanID())
	}

	var lines []map[string]any
	for _, rec := range f.log.records(t) {
		if rec["msg"] == "audit tools/call" && rec["tool"] == "delete_note" {
			lines = append(lines, rec)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d audit lines of delete_note through the bridge, want 2: %v", len(lines), lines)
	}
	for i, want := range []struct {
		outcome string
		span    sdktrace.ReadOnlySpan
	}{{"input_required", first}, {"ok", retry}} {
		l := lines[i]
		if l["outcome"] != want.outcome || l["era"] != sessionless.Version || l["trace_id"] != want.span.SpanContext().TraceID().String() {
			t.Errorf("audit line %d: %v, want outcome %s, era %s, trace_id %s", i, l, want.outcome, sessionless.Version, want.span.SpanContext().TraceID())
		}
	}
	if v := metricValue(t, f, "gemgate_tool_calls_total", "outcome", "input_required"); v != 1 {
		t.Errorf("tool_calls_total{outcome=input_required} = %v, want 1", v)
	}
	if v := metricValue(t, f, "gemgate_tool_calls_total", "outcome", "ok"); v != 2 { // write_note's and the retry's
		t.Errorf("tool_calls_total{outcome=ok} = %v, want 2 (write_note and the retry)", v)
	}
	if got := attrs(retry)["gemgate.outcome"]; got != "ok" {
		t.Errorf("the retry's server span has outcome %v, want ok", got)
	}
}

// askRounds calls tool of the askthree worker sessionless, each retry with the last round's
// requestState, and keeps the last input-required result.
type askRounds struct {
	t      *testing.T
	c      *client
	tool   string
	parked struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
}

func newAskRounds(t *testing.T, tool string) (*fixture, *askRounds) {
	f := newFixture(t, perUserMode(t, "askthree"))
	return f, &askRounds{t: t, c: f.client("alice-rw"), tool: tool}
}

// call sends the call (the first round: responses nil) or a retry with responses.
func (a *askRounds) call(id string, responses map[string]any) reply {
	a.t.Helper()
	params := map[string]any{"name": a.tool, "arguments": map[string]any{}, "_meta": elicitingMeta()}
	if responses != nil {
		params["inputResponses"], params["requestState"] = responses, a.parked.RequestState
	}
	return a.c.sessionless(id, "tools/call", params)
}

// park reads r as an input-required result asking want questions.
func (a *askRounds) park(r reply, want int) {
	a.t.Helper()
	a.parked.InputRequests = nil
	if err := json.Unmarshal(r.only(a.t).Result, &a.parked); err != nil || a.parked.ResultType != "input_required" {
		a.t.Fatalf("%s, want input_required", r.body)
	}
	if want >= 0 && len(a.parked.InputRequests) != want {
		a.t.Fatalf("input requests %s, want %d", r.body, want)
	}
}

// keyOf is the key of the question whose message is msg, if it is asked.
func (a *askRounds) keyOf(msg string) (string, bool) {
	for k, req := range a.parked.InputRequests {
		if strings.Contains(string(req), `"message":"`+msg+`"`) {
			return k, true
		}
	}
	return "", false
}

// key is keyOf, which must be asked.
func (a *askRounds) key(msg string) string {
	a.t.Helper()
	k, ok := a.keyOf(msg)
	if !ok {
		a.t.Fatalf("no question %q among %v", msg, slices.Collect(maps.Keys(a.parked.InputRequests)))
	}
	return k
}

func accept(n int) map[string]any {
	return map[string]any{"action": "accept", "content": map[string]any{"n": n}}
}

// A retry that answers one of the three questions a worker asked at once is parked again with
// the other two, under a new requestState, and audited input_required; the retry that answers
// them gets the tool's answer, which holds the three answers, each passed on once.
func TestBridgeRetryAsksAgainWhatItLeftUnanswered(t *testing.T) {
	f, a := newAskRounds(t, "ask")
	a.park(a.call("1", nil), 3)
	first, q2, q3 := a.parked.RequestState, a.key("second?"), a.key("third?")
	a.park(a.call("2", map[string]any{a.key("first?"): accept(1)}), 2)
	if a.parked.RequestState == first || a.key("second?") != q2 || a.key("third?") != q3 {
		t.Errorf("parked again under the same requestState, or under other keys than %s and %s: %v", q2, q3, a.parked.InputRequests)
	}
	r := a.call("3", map[string]any{q2: accept(2), q3: accept(3)})
	m := r.only(t)
	want := `q1={\"action\":\"accept\",\"content\":{\"n\":1}} q2={\"action\":\"accept\",\"content\":{\"n\":2}} q3={\"action\":\"accept\",\"content\":{\"n\":3}}`
	if m.Error != nil || !strings.Contains(string(m.Result), want) {
		t.Fatalf("the last retry: %s, want the tool's answer with %s", r.body, want)
	}
	// Each round's audit line is written after its answer.
	want = "[input_required input_required ok]"
	var outcomes []any
	eventually(t, 5*time.Second, "the audit lines "+want, func() bool {
		outcomes = nil
		for _, l := range f.log.records(t) {
			if l["msg"] == "audit tools/call" && l["tool"] == "ask" {
				outcomes = append(outcomes, l["outcome"])
			}
		}
		return fmt.Sprint(outcomes) == want
	})
}

// A question the worker withdraws (notifications/cancelled of its own request) is not asked of
// the 2026-07-28 client again, and the withdrawal is not written to it (it has no request to
// cancel): the retry that answers the questions left ends the call.
func TestBridgeDoesNotAskAWithdrawnQuestion(t *testing.T) {
	_, a := newAskRounds(t, "withdraw")
	call := func(id string, responses map[string]any) reply {
		t.Helper()
		r := a.call(id, responses)
		if strings.Contains(string(r.body), "notifications/cancelled") {
			t.Errorf("the worker's withdrawal reached the client: %s", r.body)
		}
		return r
	}
	// The first round may have gathered q3 before its withdrawal was read; the second round
	// asks again only what is still asked.
	a.park(call("1", nil), -1)
	a.park(call("2", map[string]any{a.key("first?"): accept(1)}), 1)
	if _, asked := a.keyOf("third?"); asked {
		t.Fatalf("asked again %v, want q2 alone (q3 was withdrawn)", a.parked.InputRequests)
	}
	r := call("3", map[string]any{a.key("second?"): accept(2)})
	if m := r.only(t); m.Error != nil || !strings.Contains(string(m.Result), `q1={\"action\":\"accept\",\"content\":{\"n\":1}} q2=`) {
		t.Fatalf("the last retry: %s, want the tool's answer", r.body)
	}
}
