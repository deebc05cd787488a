package gateway

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gemgate/gemgate/auth"
	gwmetrics "github.com/gemgate/gemgate/gateway/metrics"
	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// BenchmarkPostCall is one tools/call echo through the whole POST handler: the middleware
// chain (request id, client address, CORS, authentication, origin gate), the session or the
// sessionless route, the pool, the demo worker's pipes, the answer's SSE stream, the resumption
// log, the metrics and the audit line (JSON, discarded, at info as gemgate serve logs). No
// sockets: the handler writes into a recorder. Its allocations per call are the gateway's
// and the pool's (the worker is another process).
//
//	go test ./gateway -run '^$' -bench PostCall -benchmem
func BenchmarkPostCall(b *testing.B) {
	h := newBenchGateway(b)
	b.Run("legacy", func(b *testing.B) { benchCalls(b, h, legacyCallRequest(b, h)) })
	b.Run("sessionless", func(b *testing.B) { benchCalls(b, h, sessionlessCallRequest) })
}

// legacyCallRequest opens a session and makes tools/call echo requests of 100 bytes in it.
func legacyCallRequest(tb testing.TB, h http.Handler) func() *http.Request {
	sid := benchOpen(tb, h)
	body := legacyCallBody(100)
	return func() *http.Request {
		r := benchRequest(body)
		r.Header.Set(headerSessionID, sid)
		r.Header.Set(sessionless.HeaderProtocolVersion, "2025-06-18")
		return r
	}
}

// sessionlessCallRequest is a sessionless tools/call echo request of 100 bytes.
func sessionlessCallRequest() *http.Request {
	r := benchRequest(sessionlessCallBody(100))
	r.Header.Set(sessionless.HeaderProtocolVersion, sessionless.Version)
	r.Header.Set(sessionless.HeaderMethod, "tools/call")
	r.Header.Set(sessionless.HeaderName, "echo")
	return r
}

// A call, in either era, starts no goroutine in the gateway or the pool: the answer comes
// back on the worker's reader and the request's own goroutine writes it. (A sessionless
// request's detach from the worker once started one every time, to tell the worker nothing.)
func TestCallsStartNoGoroutine(t *testing.T) {
	h := newBenchGateway(t)
	for name, req := range map[string]func() *http.Request{
		"legacy": legacyCallRequest(t, h), "sessionless": sessionlessCallRequest,
	} {
		call := func() {
			w := connRecorder{httptest.NewRecorder()}
			h.ServeHTTP(w, req())
			if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"result"`)) {
				t.Fatalf("%s tools/call: %d %s", name, w.Code, w.Body)
			}
		}
		for range 20 { // the worker started, the tool list learned
			call()
		}
		const calls = 200
		created := goroutinesCreated()
		for range calls {
			call()
		}
		// A few for the runtime's own (a collection's workers), never one per call.
		if n := goroutinesCreated() - created; n > 10 {
			t.Errorf("%s: %d goroutines started over %d calls", name, n, calls)
		}
	}
}

func newBenchGateway(b testing.TB, mods ...func(*Options)) http.Handler {
	pol, err := policy.New(policy.Config{ReadOnlyTools: demoReadOnlyTools})
	if err != nil {
		b.Fatal(err)
	}
	authn := auth.NewAuthenticator(auth.AuthenticatorOptions{
		Verifier: tokens, ResourceMetadataURL: resourceMetadata, RequiredScopes: pol.RequiredScopes(),
	})
	o := Options{
		Authenticate:      authn.Middleware,
		InsufficientScope: authn.InsufficientScope,
		Policy:            pol,
		Workers:           &testLauncher{mode: "demo", dataDir: b.TempDir()},
		Logger:            slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Metrics:           gwmetrics.New(prometheus.NewRegistry()),
		InitTimeout:       10 * time.Second,
		Pool:              pool.Settings{WorkerPer: pool.PerUser},
	}
	for _, mod := range mods {
		mod(&o)
	}
	gw, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		gw.BeginShutdown()
		gw.Close()
	})
	return gw.Handler()
}

func benchRequest(body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://gw.test/mcp", bytes.NewReader(body))
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer alice-rw")
	return r
}

// benchOpen opens a legacy session and returns its id.
func benchOpen(b testing.TB, h http.Handler) string {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, benchRequest([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+
		`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)))
	sid := w.Header().Get(headerSessionID)
	if w.Code != http.StatusOK || sid == "" {
		b.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	r := benchRequest([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	r.Header.Set(headerSessionID, sid)
	r.Header.Set(sessionless.HeaderProtocolVersion, "2025-06-18")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusAccepted {
		b.Fatalf("notifications/initialized: %d %s", w.Code, w.Body)
	}
	return sid
}

// connRecorder is a recorder that takes deadlines, as a connection's writer does, so that the
// figures hold no errors a real connection would not make.
type connRecorder struct{ *httptest.ResponseRecorder }

func (connRecorder) SetReadDeadline(time.Time) error  { return nil }
func (connRecorder) SetWriteDeadline(time.Time) error { return nil }

func benchCalls(b *testing.B, h http.Handler, req func() *http.Request) {
	call := func() {
		w := connRecorder{httptest.NewRecorder()}
		h.ServeHTTP(w, req())
		if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"result"`)) {
			b.Fatalf("tools/call: %d %s", w.Code, w.Body)
		}
	}
	for range 20 { // the worker started, the tool list learned
		call()
	}
	b.ReportAllocs()
	created := goroutinesCreated()
	n := 0
	for b.Loop() {
		call()
		n++
	}
	b.ReportMetric(float64(goroutinesCreated()-created)/float64(n), "goroutines/op")
}

// goroutinesCreated is how many goroutines this process has started so far.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
