package telemetry

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/internal/clip"
)

// Request is the tracing of one MCP POST. Its SERVER span begins once the body is read (Begin),
// since its parent may be the body's params._meta.traceparent, dated back to the request's
// arrival; the token's verification, done before, is then recorded as its child. A nil
// *Request (tracing off) does nothing.
type Request struct {
	t        *Tracing
	start    time.Time
	verified time.Time
	cached   bool
	path     string
	header   context.Context // the parent and baggage the HTTP headers carry
	span     trace.Span      // the SERVER span, once begun
	name     string          // its name, which the worker round trip's span shares
	attrs    []attribute.KeyValue
	outcome  string
	rpcCode  int64
}

type requestKey struct{}

// Arrive begins the tracing of a POST, in the returned context (RequestFrom).
func (t *Tracing) Arrive(r *http.Request) (*Request, context.Context) {
	if t == nil {
		return nil, r.Context()
	}
	q := &Request{t: t, start: time.Now(), path: r.URL.Path,
		header: t.prop.Extract(context.Background(), propagation.HeaderCarrier(r.Header))}
	return q, context.WithValue(r.Context(), requestKey{}, q)
}

// RequestFrom is the request's tracing; nil when tracing is off.
func RequestFrom(ctx context.Context) *Request {
	q, _ := ctx.Value(requestKey{}).(*Request)
	return q
}

// Cached is where the verifier notes that the token came from its cache.
func (q *Request) Cached() *bool { return &q.cached }

// Verified marks the end of the token's verification.
func (q *Request) Verified() {
	if q != nil && q.verified.IsZero() {
		q.verified = time.Now()
	}
}

// Call is what the SERVER span says of the request, read from its headers and its body.
type Call struct {
	Method  string // mcp.method.name
	Target  string // the tool of tools/call, the prompt of prompts/get
	ID      string // the JSON-RPC id, as written
	Version string // mcp.protocol.version
	Session string // mcp.session.id (2025 era)
	Era     string // gemgate.era
	User    string // gemgate.user, when trace_user is on
	// TraceParent, TraceState and Baggage are the body's params._meta ones (SEP-414): the
	// parent when valid, else the HTTP headers' one.
	TraceParent, TraceState, Baggage string
}

// maxClientText bounds each text of a Call, which the client chose (its method, its id, its
// MCP-Protocol-Version header, up to max_body_bytes or the header limit): a span is held by
// the exporter's queue and sent whole to the collector. The tool's name comes clipped as the
// audit line clips it, within this bound.
const maxClientText = 512

// clipped is c with each of its texts at most maxClientText bytes (clip.String) and valid
// UTF-8, each run of bytes that are not read as one U+FFFD: a header may hold any byte, and the
// OTLP exporter drops a whole batch, every user's spans, for one string that is not UTF-8.
func (c Call) clipped() Call {
	for _, s := range []*string{&c.Method, &c.Target, &c.ID, &c.Version, &c.Session, &c.User} {
		*s = clip.String(strings.ToValidUTF8(*s, "\uFFFD"), maxClientText)
	}
	return c
}

// Begin starts the SERVER span of c as a child of ctx's request; the returned context carries
// it. Once only: a second call returns ctx.
func (q *Request) Begin(ctx context.Context, c Call) context.Context {
	if q == nil || q.span != nil {
		return ctx
	}
	// The body's valid traceparent and non-empty baggage win over the headers'; the
	// propagators leave what they cannot read as it was.
	p := q.header
	if c.TraceParent != "" || c.Baggage != "" {
		m := propagation.MapCarrier{"traceparent": c.TraceParent, "tracestate": c.TraceState, "baggage": c.Baggage}
		p = q.t.prop.Extract(p, m)
	}
	pctx := trace.ContextWithSpanContext(ctx, trace.SpanContextFromContext(p))
	if bag := baggage.FromContext(p); bag.Len() > 0 {
		pctx = baggage.ContextWithBaggage(pctx, bag)
	}
	c = c.clipped()
	q.name, q.attrs = spanName(c, q.path), q.attributes(c)
	ctx, q.span = q.t.tracer.Start(pctx, q.name, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(q.start), trace.WithAttributes(q.attrs...))
	// A token from the cache took a map lookup, which the attribute says; a full check or a
	// refusal gets its span.
	if q.cached && !q.verified.IsZero() {
		return ctx
	}
	_, v := q.t.tracer.Start(ctx, "gemgate.verify_token", trace.WithTimestamp(q.start),
		trace.WithAttributes(attribute.Bool("gemgate.token.cached", q.cached)))
	end := q.verified
	if end.IsZero() {
		end = time.Now()
		v.SetStatus(codes.Error, "refused")
	}
	v.End(trace.WithTimestamp(end))
	return ctx
}

// spanName is "{method} {target}", "{method}", or for a request refused before its body was
// read "POST {path}".
func spanName(c Call, path string) string {
	switch {
	case c.Method == "":
		return "POST " + path
	case c.Target != "":
		return c.Method + " " + c.Target
	}
	return c.Method
}

func (q *Request) attributes(c Call) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 13)
	a = append(a, attribute.String("network.transport", "tcp"), attribute.String("http.request.method", "POST"),
		attribute.Bool("gemgate.token.cached", q.cached))
	add := func(k, v string) {
		if v != "" {
			a = append(a, attribute.String(k, v))
		}
	}
	add("mcp.method.name", c.Method)
	add("jsonrpc.request.id", c.ID)
	add("mcp.protocol.version", c.Version)
	add("mcp.session.id", c.Session)
	add("gemgate.era", c.Era)
	switch c.Method {
	case "tools/call":
		add("gen_ai.tool.name", c.Target)
		add("gen_ai.operation.name", "execute_tool")
	case "prompts/get":
		add("gen_ai.prompt.name", c.Target)
	}
	if q.t.user {
		add("gemgate.user", c.User)
	}
	return a
}

// Outcome sets the request's outcome (the audit's, for a tools/call); else End takes it from
// the status.
func (q *Request) Outcome(outcome string) {
	if q != nil {
		q.outcome = outcome
	}
}

// Error notes the JSON-RPC error code the request was answered with.
func (q *Request) Error(code int64) {
	if q != nil {
		q.rpcCode = code
	}
}

// End ends the SERVER span with the response's HTTP status; a request refused before its body
// was read gets its span now.
func (q *Request) End(status int) {
	if q == nil {
		return
	}
	if q.span == nil {
		q.Begin(context.Background(), Call{})
	}
	outcome := q.outcome
	switch {
	case outcome != "":
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		outcome = "refused"
	case status >= 400 || q.rpcCode != 0:
		outcome = "error"
	default:
		outcome = "ok"
	}
	end := []attribute.KeyValue{attribute.String("gemgate.outcome", outcome), attribute.Int("http.response.status_code", status), {}, {}}[:2]
	if q.rpcCode != 0 {
		code := strconv.FormatInt(q.rpcCode, 10)
		end = append(end, attribute.String("rpc.response.status_code", code), attribute.String("error.type", code))
	}
	q.span.SetAttributes(end...)
	if status >= 500 || q.rpcCode != 0 || status >= 400 && outcome != "refused" {
		q.span.SetStatus(codes.Error, outcome)
	}
	q.span.End()
}

// TraceID is the request's trace id, "" unless its span records.
func (q *Request) TraceID() string {
	if q == nil || q.span == nil || !q.span.IsRecording() {
		return ""
	}
	return q.span.SpanContext().TraceID().String()
}

// Log is log with the request's trace_id (TraceID); log itself when there is none.
func (q *Request) Log(log *slog.Logger) *slog.Logger {
	if id := q.TraceID(); id != "" {
		return log.With("trace_id", id)
	}
	return log
}

// noSpan is the span that does nothing.
var noSpan = trace.SpanFromContext(context.Background())

// Step starts a child span of ctx's recording span; off, or under a span that does not
// record, it starts nothing and returns ctx and a span that does nothing, allocating nothing.
func Step(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, noSpan
	}
	return parent.TracerProvider().Tracer(scope).Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// RoundTrip starts the span of the request's round trip to its worker: a CLIENT span named as
// the SERVER span, with network.transport pipe, the method and the tool's or prompt's name; the
// other attributes are its parent's, not repeated (each is a cost in every exported span).
func (q *Request) RoundTrip(ctx context.Context) (context.Context, trace.Span) {
	if q == nil || q.span == nil || !q.span.IsRecording() {
		return ctx, noSpan
	}
	attrs := make([]attribute.KeyValue, 1, 4)
	attrs[0] = attribute.String("network.transport", "pipe")
	for _, a := range q.attrs {
		switch a.Key {
		case "mcp.method.name", "gen_ai.tool.name", "gen_ai.prompt.name":
			attrs = append(attrs, a)
		}
	}
	return q.t.tracer.Start(ctx, q.name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// EndRoundTrip ends a round trip's span with the call's outcome.
func EndRoundTrip(span trace.Span, outcome string) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("gemgate.outcome", outcome))
		if outcome == "error" {
			span.SetStatus(codes.Error, outcome)
		}
	}
	span.End()
}

// WorkerMeta is the trace context the worker's message carries in params._meta, in place of
// the client's: ctx's span's traceparent and tracestate, and baggage with trace_baggage. A
// span not recorded gives its own context, not sampled, so that a worker that traces drops the
// trace too; nil (the client's _meta unchanged) only with tracing off.
func (q *Request) WorkerMeta(ctx context.Context) map[string]string {
	if q == nil {
		return nil
	}
	m := propagation.MapCarrier{}
	q.t.prop.Inject(ctx, m)
	return m
}

// Decided records the policy's decision on a request on ctx's span (the SERVER span):
// gemgate.decision and gemgate.decided_by.
func Decided(ctx context.Context, allowed bool, why string) {
	decided(trace.SpanFromContext(ctx), allowed, why)
}

func decided(span trace.Span, allowed bool, why string) {
	if !span.IsRecording() {
		return
	}
	decision := "deny"
	if allowed {
		decision = "allow"
	}
	span.SetAttributes(attribute.String("gemgate.decision", decision), attribute.String("gemgate.decided_by", why))
}

// Decision starts the span of a policy decision that asks the worker what it lists; one read
// off the policy at once is only Decided on the SERVER span.
func Decision(ctx context.Context) (context.Context, trace.Span) {
	return Step(ctx, "gemgate.policy", trace.SpanKindInternal)
}

// EndDecision ends a decision's span with its verdict, which server's span carries too.
func EndDecision(server context.Context, span trace.Span, allowed bool, why string) {
	Decided(server, allowed, why)
	decided(span, allowed, why)
	span.End()
}
