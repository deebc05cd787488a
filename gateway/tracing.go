package gateway

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/telemetry"
)

// Tracing (docs/operations.md): a POST's span begins once its body (traceparent) is read.

// traced begins a POST's tracing before its token is verified, and ends its span once answered.
func (g *Gateway) traced(next http.Handler) http.Handler {
	if g.opts.Tracing == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		q, ctx := g.opts.Tracing.Arrive(r)
		rec := &wire.StatusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(auth.WithCacheNote(ctx, q.Cached())))
		q.End(rec.Status())
	})
}

func (g *Gateway) verified(next http.Handler) http.Handler {
	if g.opts.Tracing == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		telemetry.RequestFrom(r.Context()).Verified()
		next.ServeHTTP(w, r)
	})
}

// beginSpan begins the SERVER span of msg: r with the span in its context.
func beginSpan(r *http.Request, msg *jsonrpc.Message) *http.Request {
	q := telemetry.RequestFrom(r.Context())
	if q == nil {
		return r
	}
	p, _ := auth.PrincipalFrom(r.Context())
	c := telemetry.Call{Method: msg.Method, ID: idAttribute(msg.ID), Version: r.Header.Get(sessionless.HeaderProtocolVersion),
		Era: "2025", User: p.User}
	if sessionless.Is(r, msg) {
		c.Era = sessionless.Version
	} else if r.Header.Get(headerSessionID) != "" {
		c.Session = loggedSessionID(r.Header)
	}
	// A field Parse cannot read is left out here and refused later.
	if params, err := msg.ParamsObject(); err == nil {
		if msg.Method == "tools/call" || msg.Method == "prompts/get" {
			name, _, _ := params.String("name")
			c.Target = auditTool(name)
		}
		if meta, ok, err := params.Object("_meta"); ok && err == nil {
			c.TraceParent, _, _ = meta.String("traceparent")
			c.TraceState, _, _ = meta.String("tracestate")
			c.Baggage, _, _ = meta.String("baggage")
		}
	}
	return r.WithContext(q.Begin(r.Context(), c))
}

// idAttribute is a JSON-RPC id as jsonrpc.request.id shows it: a string's text, a number's.
func idAttribute(id []byte) string {
	if len(id) >= 2 && id[0] == '"' {
		return auditTool(string(id[1 : len(id)-1]))
	}
	return string(id)
}

// roundTrip starts the CLIENT span to the worker, its context in msg's params._meta.
func roundTrip(ctx context.Context, msg *jsonrpc.Message) (trace.Span, *jsonrpc.Message, error) {
	q := telemetry.RequestFrom(ctx)
	ctx, span := q.RoundTrip(ctx)
	fwd, err := wire.WithTraceMeta(msg, q.WorkerMeta(ctx))
	if err != nil {
		span.End()
	}
	return span, fwd, err
}
