package pool

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/jsonrpc"
)

// tracedCall is s.call's tools/call under a recording span of tp's: the pool's steps become
// its children.
func tracedCall(t *testing.T, s *session, tp trace.TracerProvider, name string, args any) (*Call, trace.Span) {
	t.Helper()
	ctx, span := tp.Tracer("test").Start(context.Background(), "server")
	b, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	id := json.RawMessage(strconv.FormatInt(callSeq.Add(1), 10))
	c, err := s.m.Call(ctx, Request{Message: &jsonrpc.Message{ID: id, Method: "tools/call", Params: b}, Identity: s.id})
	if err != nil {
		t.Fatal(err)
	}
	return c, span
}

// childrenNamed are the ended spans of that name under parent.
func childrenNamed(rec *tracetest.SpanRecorder, parent trace.Span, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name && s.Parent().SpanID() == parent.SpanContext().SpanID() {
			out = append(out, s)
		}
	}
	return out
}

// A traced call gets a gemgate.worker.acquire span when its worker had to be started and
// none when it ran already, and a gemgate.worker.queue span for the time it waited its turn
// under worker_concurrency, ended when it went to the worker.
func TestStepSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	p := newTestPool(t, Settings{Concurrency: 1})
	ctx, attachSpan := tp.Tracer("test").Start(context.Background(), "server")
	id := Identity{Issuer: "https://issuer.test", Subject: "sub-alice", User: "alice", Session: "traced"}
	m, _, err := p.Attach(ctx, Attach{Identity: id, Caller: newCaller(time.Now()),
		Params: json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	attachSpan.End()
	acquired := childrenNamed(rec, attachSpan, "gemgate.worker.acquire")
	if len(acquired) != 1 || attrs(acquired[0])["gemgate.worker.started"] != "true" {
		t.Fatalf("the attach that started the worker: %d acquire spans, want 1 saying started", len(acquired))
	}
	if v := attrs(acquired[0])["gemgate.worker.protocol_version"]; v != "2025-06-18" {
		t.Errorf("the acquire span names the started worker's protocol version %q, want 2025-06-18", v)
	}
	a := &session{m: m, id: id}

	b := attach(t, p, "alice", false, `{}`, newCaller(time.Now()))
	held, holdSpan := tracedCall(t, b, tp, "hold", nil)
	queued, queueSpan := tracedCall(t, a, tp, "wait", map[string]any{"ms": 0})
	eventually(t, "the second call queued", func() bool {
		s, _ := a.m.current()
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.w != nil && s.w.queue.len() == 1
	})
	if n := len(childrenNamed(rec, queueSpan, "gemgate.worker.queue")); n != 0 {
		t.Fatal("the queue span ended while the call waits")
	}
	b.m.Detach() // ends its held call at the worker, which takes the queued one
	if got := answer(t, queued); got != "waited" {
		t.Fatalf("queued call: %s", got)
	}
	answer(t, held)
	holdSpan.End()
	queueSpan.End()
	q := childrenNamed(rec, queueSpan, "gemgate.worker.queue")
	if len(q) != 1 || attrs(q[0])["gemgate.worker.concurrency"] != "1" {
		t.Fatalf("the queued call: %d queue spans, want 1 with gemgate.worker.concurrency 1", len(q))
	}
	for _, s := range []trace.Span{holdSpan, queueSpan} {
		if n := len(childrenNamed(rec, s, "gemgate.worker.acquire")); n != 0 {
			t.Errorf("a call to a running worker has %d acquire spans", n)
		}
	}
	if n := len(childrenNamed(rec, holdSpan, "gemgate.worker.queue")); n != 0 {
		t.Errorf("a call that ran at once has %d queue spans", n)
	}
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, a := range s.Attributes() {
		out[string(a.Key)] = a.Value.String()
	}
	return out
}
