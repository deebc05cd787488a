package gateway

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// An idle session is what a gateway holds thousands of: what it keeps must be what idling
// needs. Its call table is made at its first call, and its log lines still name the session,
// the user and the worker, each once.
func TestIdleSessionHoldsNoCallTable(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	st := c.openStream()
	t.Cleanup(st.cancel)
	s := c.sessionObj()
	s.mu.Lock()
	calls := s.calls
	s.mu.Unlock()
	if calls != nil {
		t.Errorf("an idle session holds a call table of %d entries; want none until its first call", len(calls))
	}
	if got := toolText(t, c.callTool("1", "echo", map[string]any{"text": "hi"}).only(t)); got != "hi" {
		t.Fatalf("echo after idling: %q", got)
	}
	if s.inCall() {
		t.Error("the session is busy after its only call ended")
	}
	var opened string
	for l := range strings.SplitSeq(f.log.String(), "\n") {
		if strings.Contains(l, `"session opened"`) {
			opened = l
		}
	}
	for _, want := range []string{`"session":"` + s.id + `"`, `"user":"alice"`, `"worker":"` + s.member.WorkerID() + `"`} {
		key := want[:strings.Index(want, ":")+1]
		if strings.Count(opened, key) != 1 || !strings.Contains(opened, want) {
			t.Errorf("session opened line %q: want %s once", opened, want)
		}
	}
}

type retainedKey struct{}

// While a session's stream idles, what the middleware derived for its GET (a request copy
// per layer, the context with the principal and the token's claims) is not held: only the
// context's done channel is. Each idle session would otherwise keep a kilobyte and more of
// it for as long as its client stays.
func TestIdleStreamDropsItsRequest(t *testing.T) {
	dropped, outerDropped := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f := newFixture(t, func(o *Options) {
		o.Trace = nil // message tracing (opt-in) keeps a request to trace a refusal after it
		authn := o.Authenticate
		o.Authenticate = func(next http.Handler) http.Handler {
			inner := authn(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					// Stands for what a middleware hangs on a request's context.
					v := new([256]byte)
					once.Do(func() { runtime.AddCleanup(v, func(ch chan struct{}) { close(ch) }, dropped) })
					r = r.WithContext(context.WithValue(r.Context(), retainedKey{}, v))
				}
				next.ServeHTTP(w, r)
			}))
			var outerOnce sync.Once
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					// r is the copy the gateway's layers outside authentication made.
					outerOnce.Do(func() { runtime.AddCleanup(r, func(ch chan struct{}) { close(ch) }, outerDropped) })
				}
				inner.ServeHTTP(w, r)
			})
		}
	})
	c := f.client("alice-rw")
	c.open()
	st := c.openStream()
	t.Cleanup(st.cancel)
	deadline := time.After(10 * time.Second)
	for {
		runtime.GC()
		select {
		case <-dropped:
			for held := true; held; {
				runtime.GC()
				select {
				case <-outerDropped:
					held = false
				case <-deadline:
					t.Fatal("the request copy the gateway's outer layers made is still held while its stream idles")
				case <-time.After(10 * time.Millisecond):
				}
			}
			// The stream still works without its request: a message reaches it.
			c.sessionObj().deliver(nil, []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`))
			select {
			case m := <-st.msgs:
				if m.Method != "notifications/message" {
					t.Errorf("stream got %s", m.Encode())
				}
			case <-time.After(10 * time.Second):
				t.Error("no message on the stream after its request was dropped")
			}
			return
		case <-deadline:
			t.Fatal("the GET's request context is still held while its stream idles")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
