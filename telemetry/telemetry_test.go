package telemetry

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDestination(t *testing.T) {
	cases := []struct {
		name                  string
		s                     Settings
		env                   map[string]string
		endpoint, proto, from string
	}{
		{"off", Settings{}, nil, "", "http/protobuf", ""},
		{"standard endpoint", Settings{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "http://c:4318", "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"traces endpoint and grpc", Settings{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "http://t:4317", "grpc", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{"trace_endpoint wins", Settings{Endpoint: "http://g:4318"}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, "http://g:4318", "http/protobuf", "trace_endpoint"},
	}
	for _, c := range cases {
		e, p, f := Destination(c.s, env(c.env))
		if e != c.endpoint || p != c.proto || f != c.from {
			t.Errorf("%s: got %q %q %q, want %q %q %q", c.name, e, p, f, c.endpoint, c.proto, c.from)
		}
	}
	if d := Describe(Settings{}, env(nil)); !strings.Contains(d, "off") {
		t.Errorf("Describe off: %q", d)
	}
	d := Describe(Settings{}, env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SERVICE_NAME": "gw"}))
	if !strings.Contains(d, "http://c:4318") || !strings.Contains(d, "service.name gw") || !strings.Contains(d, "parentbased_always_on") {
		t.Errorf("Describe: %q", d)
	}
	for _, bad := range []string{"c:4318", "ftp://c", "http://"} {
		if (Settings{Endpoint: bad}).Validate(env(nil)) == nil {
			t.Errorf("trace_endpoint %q accepted", bad)
		}
	}
}

// With trace_endpoint set, spans reach an OTLP/HTTP receiver at its /v1/traces by the time
// Shutdown returns, named after OTEL_SERVICE_NAME's default.
func TestNewExportsOverOTLPHTTP(t *testing.T) {
	var posts atomic.Int32
	var body atomic.Value
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			posts.Add(1)
			body.Store(string(b))
		}
	}))
	defer sink.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	tr, err := New(context.Background(), Settings{Endpoint: sink.URL})
	if err != nil || tr == nil {
		t.Fatalf("New: %v, %v", tr, err)
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	q, ctx := tr.Arrive(r)
	q.Verified()
	q.Begin(ctx, Call{Method: "tools/call", Target: "echo"})
	q.End(http.StatusOK)
	if err := tr.Shutdown(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	b, _ := body.Load().(string)
	if posts.Load() == 0 || !strings.Contains(b, "tools/call echo") || !strings.Contains(b, "gemgate") {
		t.Fatalf("%d OTLP posts; last body %q", posts.Load(), b)
	}
	if tr, err := New(context.Background(), Settings{}); tr != nil || err != nil {
		t.Errorf("no endpoint: %v, %v; want tracing off", tr, err)
	}
}

// Tracing off costs no allocation on a request's path: the nil request, a step under no span,
// the round trip, the log.
func TestOffAllocatesNothing(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	var tr *Tracing
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	n := testing.AllocsPerRun(100, func() {
		q, c := tr.Arrive(r)
		q.Verified()
		c = q.Begin(c, Call{Method: "tools/call"})
		q = RequestFrom(c)
		_, s := Step(c, "gemgate.policy", 0)
		s.End()
		_, rt := q.RoundTrip(c)
		if q.WorkerMeta(c) != nil || q.TraceID() != "" || q.Log(log) != log {
			t.Fatal("off, yet traced")
		}
		EndRoundTrip(rt, "ok")
		q.Outcome("ok")
		q.Error(0)
		q.End(200)
	})
	if n != 0 {
		t.Errorf("%v allocations per request with tracing off", n)
	}
}

// The token's verification is a span only when it was more than a cache lookup: a full check
// or a refusal. The SERVER span says gemgate.token.cached either way; Decided puts the
// policy's verdict on it.
func TestVerifySpanOnlyWhenChecked(t *testing.T) {
	for _, c := range []struct {
		name             string
		cached, verified bool
		spans            int
	}{
		{"from the cache", true, true, 0},
		{"checked in full", false, true, 1},
		{"refused", false, false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			q, ctx := NewWith(tp, Settings{}).Arrive(httptest.NewRequest(http.MethodPost, "/mcp", nil))
			*q.Cached() = c.cached
			if c.verified {
				q.Verified()
			}
			ctx = q.Begin(ctx, Call{Method: "tools/call", Target: "echo"})
			Decided(ctx, true, "read-write token")
			q.End(http.StatusOK)
			var server sdktrace.ReadOnlySpan
			verify := 0
			for _, s := range rec.Ended() {
				switch s.Name() {
				case "tools/call echo":
					server = s
				case "gemgate.verify_token":
					verify++
					if s.Parent().SpanID() != q.span.SpanContext().SpanID() {
						t.Error("verify_token is not the server span's child")
					}
				}
			}
			if verify != c.spans {
				t.Errorf("%d verify_token spans, want %d", verify, c.spans)
			}
			got := map[string]string{}
			for _, a := range server.Attributes() {
				got[string(a.Key)] = a.Value.String()
			}
			if got["gemgate.token.cached"] != strconv.FormatBool(c.cached) || got["gemgate.decision"] != "allow" || got["gemgate.decided_by"] != "read-write token" {
				t.Errorf("server span attributes %v", got)
			}
		})
	}
}
