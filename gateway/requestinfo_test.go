package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/policy"
)

// newInfoGateway is a gateway whose metadata endpoint runs h, so that a test can look at what
// the middleware chain put in a request's context, or make a handler panic.
func newInfoGateway(t *testing.T, h http.HandlerFunc, log *logBuffer) http.Handler {
	t.Helper()
	pol, err := policy.New(policy.Config{})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := New(Options{
		Authenticate:   auth.Anonymous(auth.Principal{User: "dev"}),
		Policy:         pol,
		Workers:        &testLauncher{mode: "demo", dataDir: t.TempDir()},
		Metadata:       h,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Logger:         slog.New(slog.NewJSONHandler(log, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	return gw.Handler()
}

// TestClientIP: the client address is the peer's, or, behind trusted proxies, the nearest
// address of X-Forwarded-For that is not one of them.
func TestClientIP(t *testing.T) {
	var got netip.Addr
	h := newInfoGateway(t, func(w http.ResponseWriter, r *http.Request) { got = ClientIP(r.Context()) }, &logBuffer{})
	tests := []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"peer", "192.0.2.7:4000", nil, "192.0.2.7"},
		{"untrusted peer's XFF is ignored", "192.0.2.7:4000", []string{"198.51.100.1"}, "192.0.2.7"},
		{"trusted proxy", "10.1.1.1:4000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"chain of trusted proxies", "10.1.1.1:4000", []string{"198.51.100.1, 10.2.2.2", "10.3.3.3"}, "198.51.100.1"},
		{"nearest untrusted wins", "10.1.1.1:4000", []string{"203.0.113.9, 198.51.100.1"}, "198.51.100.1"},
		{"garbage stops the walk", "10.1.1.1:4000", []string{"198.51.100.1, junk"}, "10.1.1.1"},
		{"mapped peer", "[::ffff:192.0.2.7]:4000", nil, "192.0.2.7"},
		{"no peer address", "pipe", nil, "invalid IP"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got = netip.Addr{}
			r := httptest.NewRequest(http.MethodGet, "http://gw.test/.well-known/oauth-protected-resource", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			h.ServeHTTP(httptest.NewRecorder(), r)
			if got.String() != tc.want {
				t.Fatalf("ClientIP = %s, want %s", got, tc.want)
			}
		})
	}
	if ip := ClientIP(context.Background()); ip.IsValid() {
		t.Fatalf("ClientIP of a bare context = %s", ip)
	}
}

// TestPanicLogsRequestID: a handler's panic is answered 500 and logged with the request's
// id: the client's X-Request-Id, or one of the gateway's own (host/random-number, counting
// up), different for every request.
func TestPanicLogsRequestID(t *testing.T) {
	log := &logBuffer{}
	h := newInfoGateway(t, func(w http.ResponseWriter, r *http.Request) { panic("boom") }, log)
	call := func(header string) {
		t.Helper()
		r := httptest.NewRequest(http.MethodGet, "http://gw.test/.well-known/oauth-protected-resource", nil)
		if header != "" {
			r.Header.Set("X-Request-Id", header)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusInternalServerError {
			t.Fatalf("a panic answered %d", w.Code)
		}
	}
	call("client-chosen-42")
	call("")
	call("")
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var rec struct {
			Msg       string `json:"msg"`
			Panic     string `json:"panic"`
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Msg == "handler panicked" && rec.Panic == "boom" {
			ids = append(ids, rec.RequestID)
		}
	}
	if len(ids) != 3 {
		t.Fatalf("panic lines with ids %q, want 3:\n%s", ids, log)
	}
	if ids[0] != "client-chosen-42" {
		t.Errorf("request_id = %q, want the client's X-Request-Id", ids[0])
	}
	own := regexp.MustCompile(`^[^/]+/[A-Za-z0-9]{10}-\d{6,}$`)
	for _, id := range ids[1:] {
		if !own.MatchString(id) {
			t.Errorf("request_id %q is not host/random-number", id)
		}
	}
	if ids[1] == ids[2] {
		t.Errorf("two requests share the id %q", ids[1])
	}
}

// TestAbortHandlerPanics: http.ErrAbortHandler is net/http's own way to abort a response and
// goes through the recoverer untouched.
func TestAbortHandlerPanics(t *testing.T) {
	h := newInfoGateway(t, func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }, &logBuffer{})
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want http.ErrAbortHandler", v)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "http://gw.test/.well-known/oauth-protected-resource", nil))
	t.Fatal("no panic")
}

// TestRequestInfoAllocs: the request id and client address cost the request one context
// layer, not one each, and the id is not formatted unless a log line needs it.
func TestRequestInfoAllocs(t *testing.T) {
	g := &Gateway{}
	h := g.requestInfo(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	r := httptest.NewRequest(http.MethodGet, "http://gw.test/", nil)
	w := httptest.NewRecorder()
	// The request's shallow copy, the context layer, and the value in it.
	if n := testing.AllocsPerRun(100, func() { h.ServeHTTP(w, r) }); n > 3 {
		t.Fatalf("%.1f allocations per request, want at most 3", n)
	}
}
