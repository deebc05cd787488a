package gatewaybench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/gemgate/gemgate/gateway"
	"github.com/gemgate/gemgate/telemetry"
)

// BenchmarkGatewayTracing is BenchmarkGatewayEcho (JWT on, 32 sessions) with tracing off and
// on, side by side in one run. On is what an operator gets with the SDK's batch processor and
// the OTLP/HTTP exporter, sending to a local receiver that reads and discards each export (in
// this process, so its CPU counts against tracing): "on" samples every trace (always_on),
// "ratio10" one in ten (traceidratio 0.1, as OTEL_TRACES_SAMPLER=parentbased_traceidratio with
// OTEL_TRACES_SAMPLER_ARG=0.1 does for a request without a sampled parent). cpu-µs/op is this
// process's CPU (gateway, clients, receiver) per call; the worker is another process. Run it
// with -count to interleave them:
//
//	go test ./bench/gatewaybench -run '^$' -bench GatewayTracing -benchtime 20000x -count 3
func BenchmarkGatewayTracing(b *testing.B) {
	for _, mode := range []struct {
		name    string
		sampler sdktrace.Sampler // nil: tracing off
	}{{"off", nil}, {"on", sdktrace.AlwaysSample()}, {"ratio10", sdktrace.TraceIDRatioBased(0.1)}} {
		b.Run("tracing="+mode.name, func(b *testing.B) {
			var mods []func(*gateway.Options)
			if mode.sampler != nil {
				mods = append(mods, func(o *gateway.Options) { o.Tracing = benchTracing(b, mode.sampler) })
			}
			f := newFixture(b, true, mods...)
			before := cpuTime()
			echoFrom(b, f, 32)
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// benchTracing is tracing with sampler, exported over OTLP/HTTP to a local receiver that
// discards what it gets.
func benchTracing(b *testing.B, sampler sdktrace.Sampler) *telemetry.Tracing {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	b.Cleanup(sink.Close)
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(sink.URL+"/v1/traces"))
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithBatcher(exp))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return telemetry.NewWith(tp, telemetry.Settings{})
}

// cpuTime is the CPU this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
