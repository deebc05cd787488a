package demo

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TraceServiceName is the service.name of the worker's spans, whatever OTEL_SERVICE_NAME
// says: the worker inherits gemgate's environment, and its spans must not pass for gemgate's.
const TraceServiceName = "gemgate-demo-worker"

// tracerName names the instrumentation scope of the worker's spans.
const tracerName = "github.com/gemgate/gemgate/worker/demo"

// otlpConfigured says whether the standard variables name an OTLP endpoint for traces.
func otlpConfigured() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// newOTLPProvider is a tracer provider that exports over OTLP as the standard variables say
// (endpoint, headers, protocol: grpc or http/protobuf, the default; sampler; resource
// attributes), with the service name TraceServiceName.
func newOTLPProvider(ctx context.Context) (*sdktrace.TracerProvider, error) {
	var exp sdktrace.SpanExporter
	var err error
	switch p := otlpProtocol(); p {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, errors.New("OTLP protocol " + p + " is not supported (grpc or http/protobuf)")
	}
	if err != nil {
		return nil, err
	}
	return newProvider(sdktrace.NewBatchSpanProcessor(exp)), nil
}

func otlpProtocol() string {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(v); p != "" {
			return p
		}
	}
	return "http/protobuf"
}

// newProvider is the worker's tracer provider around sp. Its resource is the SDK's default
// one with OTEL_RESOURCE_ATTRIBUTES, and service.name TraceServiceName over both.
func newProvider(sp sdktrace.SpanProcessor) *sdktrace.TracerProvider {
	res := resource.NewSchemaless(attribute.String("service.name", TraceServiceName))
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sp), sdktrace.WithResource(res))
}

// flushTraces ends tp, exporting every span still queued, within a few seconds: the worker
// is about to exit.
func flushTraces(tp *sdktrace.TracerProvider, log func(msg string, args ...any)) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		log("demo worker: exporting the last spans failed", "err", err)
	}
}

// traceRequests is middleware that puts each request in a SERVER span named
// "{method} {target}", the child of the context in its params._meta (traceparent and
// tracestate, as MCP's SEP-414 carries it) or, without one, the root of a trace.
// Notifications get no span.
func traceRequests(tp trace.TracerProvider) mcp.Middleware {
	tracer := tp.Tracer(tracerName)
	prop := propagation.TraceContext{}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			name, attrs := spanName(method, req)
			ctx = prop.Extract(ctx, metaCarrier(req))
			ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
			defer span.End()
			res, err := next(ctx, method, req)
			switch r, _ := res.(*mcp.CallToolResult); {
			case err != nil:
				span.SetStatus(codes.Error, err.Error())
				span.SetAttributes(attribute.String("error.type", "jsonrpc_error"))
			case r != nil && r.IsError:
				span.SetStatus(codes.Error, "the tool answered an error")
				span.SetAttributes(attribute.String("error.type", "tool_error"))
			}
			return res, err
		}
	}
}

// spanName is the span's name and attributes: the method, and for tools/call and
// prompts/get the tool's or prompt's name after it.
func spanName(method string, req mcp.Request) (string, []attribute.KeyValue) {
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method), attribute.String("network.transport", "pipe")}
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParamsRaw:
		if p == nil {
			break
		}
		attrs = append(attrs, attribute.String("gen_ai.tool.name", p.Name), attribute.String("gen_ai.operation.name", "execute_tool"))
		return method + " " + p.Name, attrs
	case *mcp.GetPromptParams:
		if p == nil {
			break
		}
		attrs = append(attrs, attribute.String("gen_ai.prompt.name", p.Name))
		return method + " " + p.Name, attrs
	}
	return method, attrs
}

// metaCarrier reads the string values of a request's params._meta. A request without params
// has a nil pointer of its params' type there.
func metaCarrier(req mcp.Request) propagation.MapCarrier {
	c := propagation.MapCarrier{}
	p := req.GetParams()
	if p == nil || reflect.ValueOf(p).IsNil() {
		return c
	}
	for k, v := range p.GetMeta() {
		if s, ok := v.(string); ok {
			c[k] = s
		}
	}
	return c
}

// traceMeta is the params._meta of a request the worker makes of the client within ctx (an
// elicitation, a sampling request): traceparent, and tracestate when there is one, of ctx's
// span, the one traceRequests started for the call that asks, so that the client's handling
// of the request joins the trace as that span's child. It is nil, and adds nothing, unless
// that span is recording: with tracing off there is no span to carry on.
func traceMeta(ctx context.Context) mcp.Meta {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c) // a recording span's context is valid: never empty
	m := make(mcp.Meta, len(c))
	for k, v := range c {
		m[k] = v
	}
	return m
}
