package gateway

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// onFirstWrite calls do, on the handler's goroutine, when the handler first writes.
type onFirstWrite struct {
	http.ResponseWriter
	once sync.Once
	do   func()
}

func (w *onFirstWrite) WriteHeader(code int) {
	w.once.Do(w.do)
	w.ResponseWriter.WriteHeader(code)
}

func (w *onFirstWrite) Write(b []byte) (int, error) {
	w.once.Do(w.do)
	return w.ResponseWriter.Write(b)
}

func (w *onFirstWrite) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// net/http holds a request for as long as its handler runs, and an idle GET stream runs for
// hours: by the time the stream starts, its request's headers no longer hold the bearer
// token, neither in the header map nor in the slot of the array the header parser filled
// (which the request's other header values keep alive).
func TestStreamDropsTheBearerToken(t *testing.T) {
	f := newFixture(t)
	type seen struct {
		values int    // Authorization values left in the request's headers
		slot   string // what the parser's slot for the token holds
	}
	at := make(chan seen, 2)
	h := f.gw.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vals := r.Header["Authorization"]
		if r.Method != http.MethodGet || len(vals) != 1 {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&onFirstWrite{ResponseWriter: w, do: func() {
			at <- seen{len(r.Header.Values("Authorization")), vals[0]}
		}}, r)
	}))
	t.Cleanup(srv.Close)
	wrapped := *f
	wrapped.url = srv.URL + "/mcp"
	c := wrapped.client("alice-rw")
	if r := c.open(); r.status != http.StatusOK {
		t.Fatalf("initialize: %d", r.status)
	}
	c.openStream()
	select {
	case got := <-at:
		if got.values != 0 || got.slot != "" {
			t.Fatalf("the stream started with the token still in its request: %d Authorization values, parser slot %q", got.values, got.slot)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream never wrote")
	}
	// The session goes on: a call, with the token its own request carries, is answered, and
	// the stream is still the session's.
	if text := toolText(t, c.callTool("1", "echo", map[string]any{"text": "still here"}).only(t)); text != "still here" {
		t.Fatalf("call after the stream opened: %q", text)
	}
	if s := c.sessionObj(); s == nil || !s.outbox.HasStream() {
		t.Fatal("the session's stream is gone")
	}
}
