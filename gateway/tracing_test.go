package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/telemetry"
)

// The client's trace: its context in params._meta (SEP-414), or in the HTTP header.
const (
	clientTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan   = "00f067aa0ba902b7"
	clientParent = "00-" + clientTrace + "-" + clientSpan + "-01"
	headerTrace  = "11111111111111111111111111111111"
	headerParent = "00-" + headerTrace + "-2222222222222222-01"
)

// tracedFixture is a gateway whose spans a recorder keeps, its workers in mode (echometa: the
// worker answers with the params._meta it got).
func tracedFixture(t *testing.T, mode string, s telemetry.Settings, perUser bool) (*fixture, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	f := newFixture(t, func(o *Options) {
		o.Tracing = telemetry.NewWith(tp, s)
		o.Workers = &testLauncher{mode: mode, dataDir: t.TempDir()}
		if perUser {
			o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		}
	})
	return f, rec
}

// spansNamed are the ended spans of that name.
func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// serverSpan waits for the SERVER span of name to end (it ends once its answer is written,
// which the client may have read before) and returns it.
func serverSpan(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	eventually(t, 5*time.Second, "the server span "+name+" ended", func() bool {
		for _, s := range spansNamed(rec, name) {
			if s.SpanKind() == trace.SpanKindServer {
				return true
			}
		}
		return false
	})
	return oneSpan(t, rec, name, trace.SpanKindServer, nil)
}

// oneSpan is the one ended span of name and kind, a child of parent when parent is not nil.
func oneSpan(t *testing.T, rec *tracetest.SpanRecorder, name string, kind trace.SpanKind, parent sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range spansNamed(rec, name) {
		if s.SpanKind() == kind && (parent == nil || s.Parent().SpanID() == parent.SpanContext().SpanID()) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range rec.Ended() {
			names = append(names, s.Name()+"/"+s.SpanKind().String())
		}
		t.Fatalf("want one %s span %q, got %d; spans: %v", kind, name, len(found), names)
	}
	return found[0]
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, a := range s.Attributes() {
		out[string(a.Key)] = a.Value.String()
	}
	return out
}

func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %q, want %q (all: %v)", s.Name(), k, got[k], v, got)
		}
	}
}

// workerMeta is the params._meta the echometa worker got, from its answer.
func workerMeta(t *testing.T, r reply) map[string]any {
	t.Helper()
	text := toolText(t, r.only(t))
	var meta map[string]any
	if err := json.Unmarshal([]byte(text), &meta); err != nil {
		t.Fatalf("the worker's _meta %q: %v", text, err)
	}
	return meta
}

func callBody(id, tool, meta string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":{"text":"s3cret-argument"},"_meta":%s}}`, id, tool, meta)
}

// A session's tools/call: the SERVER span is a child of the client's params._meta.traceparent
// (not of the HTTP header's), with its steps beneath it, and the worker gets the round trip
// span's context, not the client's, without the client's baggage.
func TestTracingSessionCall(t *testing.T) {
	f, rec := tracedFixture(t, "echometa", telemetry.Settings{}, false)
	c := f.client("alice-rw")
	c.open()
	r := c.post(callBody("7", "echo", `{"traceparent":"`+clientParent+`","tracestate":"vendor=1","baggage":"secret=abc"}`), "traceparent", headerParent)
	meta := workerMeta(t, r)

	server := serverSpan(t, rec, "tools/call echo")
	if got := server.Parent(); got.TraceID().String() != clientTrace || got.SpanID().String() != clientSpan || !got.IsRemote() {
		t.Errorf("server span's parent %s/%s, want the client's %s/%s", got.TraceID(), got.SpanID(), clientTrace, clientSpan)
	}
	wantAttrs(t, server, map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		"jsonrpc.request.id": "7", "mcp.protocol.version": "2025-11-25", "mcp.session.id": c.session,
		"network.transport": "tcp", "gemgate.era": "2025", "gemgate.outcome": "ok", "http.response.status_code": "200",
	})
	if _, ok := attrs(server)["gemgate.user"]; ok {
		t.Error("gemgate.user on the span without trace_user")
	}
	// The steps that did nothing worth a span are the server span's attributes: the policy's
	// decision, and the token's verification when it came from the cache. The worker, started
	// by initialize, was found at once: no acquire span.
	wantAttrs(t, server, map[string]string{"gemgate.decision": "allow", "gemgate.decided_by": "read-write token"})
	checkVerifySpan(t, rec, server)
	for _, name := range []string{"gemgate.policy", "gemgate.worker.acquire", "gemgate.worker.queue"} {
		for _, s := range spansNamed(rec, name) {
			if s.Parent().SpanID() == server.SpanContext().SpanID() {
				t.Errorf("a %s span under a call allowed at once to a running worker: %v", name, attrs(s))
			}
		}
	}
	client := oneSpan(t, rec, "tools/call echo", trace.SpanKindClient, server)
	if client.Parent().SpanID() != server.SpanContext().SpanID() {
		t.Error("the worker round trip is not a child of the server span")
	}
	wantAttrs(t, client, map[string]string{"network.transport": "pipe", "mcp.method.name": "tools/call", "gemgate.outcome": "ok"})

	want := "00-" + clientTrace + "-" + client.SpanContext().SpanID().String() + "-01"
	if meta["traceparent"] != want {
		t.Errorf("the worker got traceparent %v, want the round trip span's %s", meta["traceparent"], want)
	}
	if meta["tracestate"] != "vendor=1" {
		t.Errorf("the worker got tracestate %v, want the client's vendor=1 carried on", meta["tracestate"])
	}
	if _, ok := meta["baggage"]; ok {
		t.Errorf("the client's baggage reached the worker: %v", meta)
	}

	// The audit line and the request-duration exemplar carry the trace id.
	audited := false
	for _, l := range f.log.records(t) {
		if l["msg"] == "audit tools/call" {
			audited = true
			if l["trace_id"] != clientTrace {
				t.Errorf("audit line trace_id %v, want %s", l["trace_id"], clientTrace)
			}
		}
	}
	if !audited {
		t.Error("no audit line")
	}
	if ex := exemplarTraceIDs(t, f); !strings.Contains(ex, clientTrace) {
		t.Errorf("request duration exemplars %q lack the trace id", ex)
	}
}

// checkVerifySpan checks the token's verification under server: a gemgate.verify_token span
// when the token was checked in full, none when it came from the cache of verified tokens,
// as server's gemgate.token.cached says.
func checkVerifySpan(t *testing.T, rec *tracetest.SpanRecorder, server sdktrace.ReadOnlySpan) {
	t.Helper()
	var under []sdktrace.ReadOnlySpan
	for _, s := range spansNamed(rec, "gemgate.verify_token") {
		if s.Parent().SpanID() == server.SpanContext().SpanID() {
			under = append(under, s)
		}
	}
	switch cached := attrs(server)["gemgate.token.cached"]; {
	case cached == "true" && len(under) != 0:
		t.Errorf("a token from the cache has a verify_token span")
	case cached == "false" && len(under) != 1:
		t.Errorf("a token checked in full has %d verify_token spans, want 1", len(under))
	case cached == "false":
		wantAttrs(t, under[0], map[string]string{"gemgate.token.cached": "false"})
	case cached != "true":
		t.Errorf("server span's gemgate.token.cached = %q", cached)
	}
}

// exemplarTraceIDs are the trace_id labels of the request-duration histogram's exemplars.
func exemplarTraceIDs(t *testing.T, f *fixture) string {
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, mf := range mfs {
		if mf.GetName() != "gemgate_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, b := range m.GetHistogram().GetBucket() {
				for _, l := range b.GetExemplar().GetLabel() {
					ids = append(ids, l.GetName()+"="+l.GetValue())
				}
			}
		}
	}
	return strings.Join(ids, " ")
}

// A 2026-07-28 request (a legacy worker behind the bridge) is traced as a session's: the
// HTTP header's parent when _meta names none, and the worker gets gemgate's context.
func TestTracingSessionlessCall(t *testing.T) {
	f, rec := tracedFixture(t, "echometa", telemetry.Settings{}, true)
	c := f.client("alice-rw")
	r := c.sessionless("3", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{}}, "traceparent", headerParent)
	meta := workerMeta(t, r)
	server := serverSpan(t, rec, "tools/call echo")
	if got := server.Parent(); got.TraceID().String() != headerTrace {
		t.Errorf("server span's trace %s, want the header's %s", got.TraceID(), headerTrace)
	}
	wantAttrs(t, server, map[string]string{"gemgate.era": sessionless.Version, "mcp.protocol.version": sessionless.Version,
		"jsonrpc.request.id": "3", "gemgate.outcome": "ok"})
	if _, ok := attrs(server)["mcp.session.id"]; ok {
		t.Error("a sessionless request's span names a session")
	}
	client := oneSpan(t, rec, "tools/call echo", trace.SpanKindClient, server)
	if want := "00-" + headerTrace + "-" + client.SpanContext().SpanID().String() + "-01"; meta["traceparent"] != want {
		t.Errorf("the worker got traceparent %v, want %s", meta["traceparent"], want)
	}
	// The first request of a per-user worker starts it: an acquire span says so.
	acquire := spansNamed(rec, "gemgate.worker.acquire")
	started := 0
	for _, a := range acquire {
		if a.Parent().SpanID() != server.SpanContext().SpanID() {
			t.Errorf("gemgate.worker.acquire is not a child of the server span")
		}
		if attrs(a)["gemgate.worker.started"] == "true" {
			started++
		}
	}
	if started != 1 {
		t.Errorf("%d acquire spans of %d say they started the worker, want 1", started, len(acquire))
	}
	wantAttrs(t, server, map[string]string{"gemgate.decision": "allow"})
	checkVerifySpan(t, rec, server)
	audited := 0
	for _, l := range f.log.records(t) {
		if l["msg"] == "audit tools/call" {
			audited++
			if l["trace_id"] != headerTrace || l["outcome"] != "ok" {
				t.Errorf("audit line %v, want trace_id %s and outcome ok", l, headerTrace)
			}
		}
	}
	if audited != 1 {
		t.Errorf("%d audit lines, want 1", audited)
	}

	// The next request finds the worker running: no acquire span.
	before := len(acquire)
	c.sessionless("4", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{}})
	eventually(t, 5*time.Second, "the second call's server span ended", func() bool { return len(spansNamed(rec, "tools/call echo")) >= 4 })
	if n := len(spansNamed(rec, "gemgate.worker.acquire")); n != before {
		t.Errorf("a call to a running worker made %d acquire spans", n-before)
	}
}

// Requests refused get a span with their outcome: a 401 before the body is read (named by the
// endpoint, its parent the header's), a 403 of the policy (named by the call).
func TestTracingRefused(t *testing.T) {
	f, rec := tracedFixture(t, "demo", telemetry.Settings{}, false)
	anon := f.client("")
	if r := anon.post(callBody("1", "echo", `{}`), "traceparent", headerParent); r.status != http.StatusUnauthorized {
		t.Fatalf("no token: %d", r.status)
	}
	s := serverSpan(t, rec, "POST /mcp")
	wantAttrs(t, s, map[string]string{"gemgate.outcome": "refused", "http.response.status_code": "401"})
	if s.Parent().TraceID().String() != headerTrace {
		t.Errorf("refused span's trace %s, want the header's", s.Parent().TraceID())
	}

	ro := f.client("alice-ro")
	ro.open()
	r := ro.post(callBody("2", "write_note", `{"traceparent":"`+clientParent+`"}`))
	if r.status != http.StatusForbidden {
		t.Fatalf("read-only token calling write_note: %d %s", r.status, r.body)
	}
	s = serverSpan(t, rec, "tools/call write_note")
	wantAttrs(t, s, map[string]string{"gemgate.outcome": "refused", "http.response.status_code": "403",
		"rpc.response.status_code": "-32003"})
	p := oneSpan(t, rec, "gemgate.policy", trace.SpanKindInternal, s)
	wantAttrs(t, p, map[string]string{"gemgate.decision": "deny", "gemgate.decided_by": "read-only: not vouched read-only"})
	if len(spansNamed(rec, "tools/call write_note")) != 1 {
		t.Error("a refused call has a worker round trip span")
	}
}

// No span holds the token, the tool's arguments or its result, in an attribute, an event or a
// status; the user only with trace_user.
func TestTracingKeepsSecretsOut(t *testing.T) {
	f, rec := tracedFixture(t, "demo", telemetry.Settings{User: true}, false)
	c := f.client("alice-rw")
	c.open()
	r := c.post(callBody("4", "echo", `{"traceparent":"`+clientParent+`"}`))
	if got := toolText(t, r.only(t)); !strings.Contains(got, "s3cret-argument") {
		t.Fatalf("echo answered %q", got)
	}
	n := 0
	for _, s := range rec.Ended() {
		n++
		var texts []string
		for _, a := range s.Attributes() {
			texts = append(texts, a.Value.String())
		}
		for _, e := range s.Events() {
			texts = append(texts, e.Name)
			for _, a := range e.Attributes {
				texts = append(texts, a.Value.String())
			}
		}
		texts = append(texts, s.Status().Description, s.Name())
		for _, a := range s.Resource().Attributes() {
			texts = append(texts, a.Value.String())
		}
		for _, text := range texts {
			for _, secret := range []string{"alice-rw", "s3cret-argument", "Bearer"} {
				if strings.Contains(text, secret) {
					t.Errorf("span %q holds %q: %q", s.Name(), secret, text)
				}
			}
		}
	}
	if n < 5 {
		t.Fatalf("only %d spans recorded", n)
	}
	wantAttrs(t, serverSpan(t, rec, "tools/call echo"), map[string]string{"gemgate.user": "alice"})
}

// With trace_baggage the client's baggage goes on to the worker; a malformed traceparent in
// _meta is no parent (the header's is) and is not forwarded.
func TestTracingBaggageAndMalformedParent(t *testing.T) {
	f, rec := tracedFixture(t, "echometa", telemetry.Settings{Baggage: true}, false)
	c := f.client("alice-rw")
	c.open()
	meta := workerMeta(t, c.post(callBody("5", "echo", `{"traceparent":"00-zz-bad-01","baggage":"team=blue"}`), "traceparent", headerParent))
	server := serverSpan(t, rec, "tools/call echo")
	if server.Parent().TraceID().String() != headerTrace {
		t.Errorf("parent %s, want the header's %s", server.Parent().TraceID(), headerTrace)
	}
	if tp, _ := meta["traceparent"].(string); !strings.HasPrefix(tp, "00-"+headerTrace+"-") {
		t.Errorf("the worker got traceparent %q", tp)
	}
	if meta["baggage"] != "team=blue" {
		t.Errorf("baggage %v, want team=blue with trace_baggage on", meta["baggage"])
	}
}

// Tracing off: no span anywhere (not even through the global provider), and the worker gets
// the client's _meta byte for byte, its trace context and baggage included.
func TestTracingOffChangesNothing(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	f := newFixture(t, func(o *Options) { o.Workers = &testLauncher{mode: "echometa", dataDir: t.TempDir()} })
	c := f.client("alice-rw")
	c.open()
	sent := `{"traceparent":"` + clientParent + `", "baggage":"secret=abc","x":[1, 2]}`
	r := c.post(callBody("6", "echo", sent), "traceparent", headerParent)
	if got := toolText(t, r.only(t)); got != sent {
		t.Errorf("the worker got _meta %s, want the client's %s", got, sent)
	}
	if n := len(rec.Ended()) + len(rec.Started()); n != 0 {
		t.Errorf("%d spans with tracing off", n)
	}
	for _, l := range f.log.records(t) {
		if _, ok := l["trace_id"]; ok {
			t.Errorf("a log line with trace_id while tracing is off: %v", l)
		}
	}
	if ex := exemplarTraceIDs(t, f); ex != "" {
		t.Errorf("exemplars with tracing off: %s", ex)
	}
}

// BenchmarkPostCallTracing is BenchmarkPostCall with tracing off and on (every span sampled,
// the SDK's batch processor, an exporter that drops the batches): gemgate's own cost of its
// spans, without the export's.
//
//	go test ./gateway -run '^$' -bench PostCallTracing -benchmem
func BenchmarkPostCallTracing(b *testing.B) {
	for _, on := range []bool{false, true} {
		var mods []func(*Options)
		name := "off"
		if on {
			name = "on"
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			b.Cleanup(func() { _ = tp.Shutdown(b.Context()) })
			mods = append(mods, func(o *Options) { o.Tracing = telemetry.NewWith(tp, telemetry.Settings{}) })
		}
		h := newBenchGateway(b, mods...)
		b.Run("legacy/tracing="+name, func(b *testing.B) { benchCalls(b, h, legacyCallRequest(b, h)) })
		b.Run("sessionless/tracing="+name, func(b *testing.B) { benchCalls(b, h, sessionlessCallRequest) })
	}
}

// The bridge: a legacy worker's question parks a 2026-07-28 call, and the client's retry with
// its answer is one gemgate.bridge.round, under the retry's server span.
func TestTracingBridgeRound(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	f := newFixture(t, func(o *Options) {
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
		o.Workers = &testLauncher{mode: "legacydemo", dataDir: t.TempDir()}
		o.Tracing = telemetry.NewWith(tp, telemetry.Settings{})
	})
	c := f.client("alice-rw")
	meta := func() map[string]any {
		m := sessionlessMeta()
		m[sessionless.MetaClientCapabilities] = map[string]any{"elicitation": map[string]any{}}
		return m
	}
	if r := c.sessionless("1", "tools/call", map[string]any{"name": "write_note", "arguments": map[string]any{"name": "n", "text": "x"}}); r.only(t).Error != nil {
		t.Fatalf("write_note: %s", r.body)
	}
	r := c.sessionless("2", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": meta()})
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(r.only(t).Result, &res); err != nil || res.ResultType != "input_required" {
		t.Fatalf("delete_note: %s", r.body)
	}
	if n := len(spansNamed(rec, "gemgate.bridge.round")); n != 0 {
		t.Fatalf("%d bridge rounds before the retry", n)
	}
	responses := map[string]any{}
	for k := range res.InputRequests {
		responses[k] = map[string]any{"action": "accept", "content": map[string]any{}}
	}
	r = c.sessionless("3", "tools/call", map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "n"}, "_meta": meta(),
		"inputResponses": responses, "requestState": res.RequestState})
	if m := r.only(t); m.Error != nil {
		t.Fatalf("retry: %s", r.body)
	}
	eventually(t, 5*time.Second, "the retry's span", func() bool { return len(spansNamed(rec, "tools/call delete_note")) >= 3 })
	round := oneSpan(t, rec, "gemgate.bridge.round", trace.SpanKindInternal, nil)
	var retry sdktrace.ReadOnlySpan
	for _, s := range spansNamed(rec, "tools/call delete_note") {
		if s.SpanKind() == trace.SpanKindServer && attrs(s)["jsonrpc.request.id"] == "3" {
			retry = s
		}
	}
	if retry == nil || round.Parent().SpanID() != retry.SpanContext().SpanID() {
		t.Errorf("the bridge round is not a child of the retry's server span")
	}
}

// A policy refusal of a gated method other than tools/call (here resources/read, under a
// resource rule) is audited with the request's trace id in both eras, as a tools/call is.
func TestTracingGatedRefusalInEachEra(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	f := newFixture(t, func(o *Options) {
		pol, err := policy.New(policy.Config{ReadOnlyTools: demoReadOnlyTools,
			ResourceRules: []policy.Rule{{URIs: []string{"notes://*"}, Scope: "notes:admin"}}})
		if err != nil {
			t.Fatal(err)
		}
		o.Policy = pol
		o.Tracing = telemetry.NewWith(tp, telemetry.Settings{})
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
	})
	read := map[string]any{"uri": "notes://secret"}
	session := f.client("alice-rw")
	session.open()
	if r := session.post(rpcBody("2", "resources/read", read), "traceparent", headerParent); r.status != http.StatusForbidden {
		t.Fatalf("resources/read on a session: %d %s, want 403", r.status, r.body)
	}
	if r := f.client("alice-rw").sessionless("3", "resources/read", read, "traceparent", headerParent); r.status != http.StatusForbidden {
		t.Fatalf("sessionless resources/read: %d %s, want 403", r.status, r.body)
	}
	eras := map[string]bool{}
	for _, l := range f.log.records(t) {
		if l["msg"] != "audit resources/read" {
			continue
		}
		era, _ := l["era"].(string)
		eras[era] = true
		if l["trace_id"] != headerTrace || l["outcome"] != "forbidden" {
			t.Errorf("audit line %v, want trace_id %s and outcome forbidden", l, headerTrace)
		}
	}
	if len(eras) != 2 {
		t.Errorf("audit lines of the eras %v, want one of each", eras)
	}
}

// What a client chooses (its method, its id, its MCP-Protocol-Version header) reaches a span
// clipped, as the audit line clips a tool's name: an unbounded span name or attribute would
// be held by the exporter's queue (2048 spans) and sent whole to the collector, so that one
// user's requests, a few MiB each, would cost gemgate gigabytes and make the collector refuse
// every user's batch.
func TestTracingClipsWhatTheClientChose(t *testing.T) {
	f, rec := tracedFixture(t, "demo", telemetry.Settings{}, false)
	c := f.client("alice-rw")
	c.open()
	long := strings.Repeat("m", 256<<10)
	digits := strings.Repeat("7", 256<<10)
	version := strings.Repeat("v", 32<<10)
	c.post(`{"jsonrpc":"2.0","id":1,"method":"`+long+`","params":{}}`, "Mcp-Protocol-Version", version)
	c.post(`{"jsonrpc":"2.0","id":` + digits + `,"method":"ping"}`)
	eventually(t, 5*time.Second, "both server spans ended", func() bool {
		n := 0
		for _, s := range rec.Ended() {
			if s.SpanKind() == trace.SpanKindServer {
				n++
			}
		}
		return n >= 3 // open's initialize, then the two above
	})
	const bound = 1 << 10
	for _, s := range rec.Ended() {
		if len(s.Name()) > bound {
			t.Errorf("a span's name is %d bytes: %.40q...", len(s.Name()), s.Name())
		}
		for _, a := range s.Attributes() {
			if v := a.Value.String(); len(v) > bound {
				t.Errorf("span %.40q: %s is %d bytes", s.Name(), a.Key, len(v))
			}
		}
	}
}
