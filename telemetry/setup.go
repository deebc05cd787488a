package telemetry

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/gemgate/gemgate/internal/clip"
)

// Settings are gemgate's own tracing settings; everything else comes from the standard
// OTEL_* environment.
type Settings struct {
	// Endpoint (trace_endpoint) is the OTLP endpoint, read as OTEL_EXPORTER_OTLP_ENDPOINT is,
	// and wins over it.
	Endpoint string
	// User (trace_user) puts the user's name on the server span as gemgate.user.
	User bool
	// Baggage (trace_baggage) passes a client's W3C baggage to the worker; else it is dropped.
	Baggage bool
	// Log is where New sends the exporter's errors (a collector that refuses a batch or cannot
	// be reached), at warn, at most once a minute; nil leaves OpenTelemetry's handler, Go's
	// standard logger.
	Log *slog.Logger
}

// Validate checks where New would send traces, whichever setting names it: the endpoint
// (trace_endpoint, or the standard variable) an http or https URL with a host, and the
// protocol grpc or http/protobuf; tracing off passes. getenv is os.Getenv outside tests.
func (s Settings) Validate(getenv func(string) string) error {
	endpoint, protocol, from := Destination(s, getenv)
	if endpoint == "" {
		return nil
	}
	if u, err := url.Parse(endpoint); err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s %q: want an http:// or https:// URL of an OTLP receiver", from, endpoint)
	}
	if protocol != "grpc" && protocol != "http/protobuf" {
		name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
		if getenv(name) == "" {
			name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		}
		return fmt.Errorf("%s %q: the OTLP protocol must be grpc or http/protobuf", name, protocol)
	}
	return nil
}

// Tracing is gemgate's tracer. A nil *Tracing is tracing off.
type Tracing struct {
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
	user     bool
	provider *sdktrace.TracerProvider // nil for one made by NewWith
}

const (
	scope         = "github.com/gemgate/gemgate" // the instrumentation scope of gemgate's spans
	shutdownBound = 5 * time.Second
)

// Destination is where traces go: the OTLP endpoint and protocol, and which setting named the
// endpoint; an empty endpoint is tracing off. getenv is os.Getenv outside tests.
func Destination(s Settings, getenv func(string) string) (endpoint, protocol, from string) {
	protocol = cmp.Or(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "http/protobuf")
	switch {
	case s.Endpoint != "":
		return s.Endpoint, protocol, "trace_endpoint"
	case getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), protocol, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	case getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), protocol, "OTEL_EXPORTER_OTLP_ENDPOINT"
	}
	return "", protocol, ""
}

// Describe says where traces go, or that tracing is off, for `gemgate check`.
func Describe(s Settings, getenv func(string) string) string {
	endpoint, protocol, from := Destination(s, getenv)
	if endpoint == "" {
		return "tracing: off (set OTEL_EXPORTER_OTLP_ENDPOINT or trace_endpoint to export traces)"
	}
	return fmt.Sprintf("tracing: OTLP %s to %s (from %s), service.name %s, sampler %s", protocol, endpoint, from,
		cmp.Or(getenv("OTEL_SERVICE_NAME"), "gemgate"), cmp.Or(getenv("OTEL_TRACES_SAMPLER"), "parentbased_always_on"))
}

// New sets tracing up from s and the environment; nil, nil when no endpoint is configured.
// Shutdown flushes it.
func New(ctx context.Context, s Settings) (*Tracing, error) {
	endpoint, protocol, from := Destination(s, os.Getenv)
	if endpoint == "" {
		return nil, nil
	}
	if err := s.Validate(os.Getenv); err != nil {
		return nil, err
	}
	if from != "trace_endpoint" {
		endpoint = "" // the exporter reads the environment itself
	}
	exp, err := exporter(ctx, protocol, endpoint)
	if err != nil {
		return nil, err
	}
	// service.name defaults to gemgate; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "gemgate")),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	if s.Log != nil {
		otel.SetErrorHandler(exportErrors(s.Log))
	}
	// The sampler is the SDK's default: OTEL_TRACES_SAMPLER(_ARG), else parentbased_always_on.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := NewWith(tp, s)
	t.provider = tp
	return t, nil
}

// NewWith is tracing on tp, for tests and benchmarks with a recorder of their own.
func NewWith(tp trace.TracerProvider, s Settings) *Tracing {
	var prop propagation.TextMapPropagator = propagation.TraceContext{}
	if s.Baggage {
		prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	return &Tracing{tracer: tp.Tracer(scope), prop: prop, user: s.User}
}

// Shutdown exports what is left, until deadline and for at most shutdownBound, and stops the
// exporter.
func (t *Tracing) Shutdown(deadline time.Time) error {
	if t == nil || t.provider == nil {
		return nil
	}
	if bound := time.Now().Add(shutdownBound); deadline.After(bound) {
		deadline = bound
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	return t.provider.Shutdown(ctx)
}

// exporter is the OTLP exporter for protocol; endpoint, when set, is trace_endpoint's.
func exporter(ctx context.Context, protocol, endpoint string) (sdktrace.SpanExporter, error) {
	switch protocol {
	case "grpc":
		var opts []otlptracegrpc.Option
		if endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
		}
		return otlptracegrpc.New(ctx, opts...)
	case "http/protobuf":
		var opts []otlptracehttp.Option
		if endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(signalURL(endpoint)))
		}
		return otlptracehttp.New(ctx, opts...)
	}
	return nil, fmt.Errorf("tracing: OTLP protocol %q is not supported: use grpc or http/protobuf", protocol)
}

// signalURL is an OTLP/HTTP base URL with the traces path added, as the exporter does for
// OTEL_EXPORTER_OTLP_ENDPOINT.
func signalURL(base string) string {
	u, err := url.Parse(base)
	if err != nil || strings.Trim(u.Path, "/") != "" {
		return base
	}
	u.Path = "/v1/traces"
	return u.String()
}

// exportErrors logs OpenTelemetry's errors (the exporter's, once per batch it could not
// send) to log at warn, at most once a minute, each clipped: a collector's answer is quoted in
// them.
func exportErrors(log *slog.Logger) otel.ErrorHandler {
	sometimes := &rate.Sometimes{Interval: time.Minute}
	return otel.ErrorHandlerFunc(func(err error) {
		sometimes.Do(func() {
			log.Warn("tracing: exporting spans failed (logged at most once a minute)", "error", clip.String(err.Error(), 1024))
		})
	})
}
