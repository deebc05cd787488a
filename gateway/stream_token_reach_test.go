package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/sessionless"
)

// longToken is a bearer token of a real token's size: the test tokens are too short for
// their header value to be an allocation of its own (the runtime batches tiny pointer-free
// objects), and a weak pointer to a batched one says nothing.
var longToken = "alice-long." + strings.Repeat("x", 1024)

// longTokens accepts longToken as alice's read-write token, and the fixture's tokens.
type longTokens struct{}

func (longTokens) Verify(ctx context.Context, raw string) (auth.Principal, error) {
	if raw == longToken {
		return tokens.Verify(ctx, "alice-rw")
	}
	return tokens.Verify(ctx, raw)
}

func withLongTokens(o *Options) {
	authn := auth.NewAuthenticator(auth.AuthenticatorOptions{
		Verifier: longTokens{}, ResourceMetadataURL: resourceMetadata, RequiredScopes: o.Policy.RequiredScopes(),
	})
	o.Authenticate, o.InsufficientScope = authn.Middleware, authn.InsufficientScope
}

// tokenWatch is a handler in front of the gateway that takes, from each stream request (a
// GET, or a subscriptions/listen POST) carrying longToken, a weak pointer to the header value net/http parsed (the allocation the token
// lives in on the server's side), and tells when the gateway first writes and when its
// handler returns. It keeps no reference to the request itself.
type tokenWatch struct {
	next http.Handler
	gets chan watchedGet
}

type watchedGet struct {
	token    weak.Pointer[byte]
	wrote    chan struct{} // closed at the handler's first write
	returned chan struct{} // closed when the gateway's handler returned
}

func (tw *tokenWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	vals := r.Header["Authorization"]
	stream := r.Method == http.MethodGet || r.Header.Get(sessionless.HeaderMethod) == "subscriptions/listen"
	if !stream || len(vals) != 1 || !strings.HasSuffix(vals[0], longToken) {
		tw.next.ServeHTTP(w, r)
		return
	}
	g := watchedGet{token: weak.Make(unsafe.StringData(vals[0])), wrote: make(chan struct{}), returned: make(chan struct{})}
	vals = nil
	tw.gets <- g
	defer close(g.returned)
	tw.next.ServeHTTP(&onFirstWrite{ResponseWriter: w, do: func() { close(g.wrote) }}, r)
}

// nextGet is the next watched GET, once the gateway has written to it.
func (tw *tokenWatch) nextGet(t *testing.T) watchedGet {
	t.Helper()
	var g watchedGet
	select {
	case g = <-tw.gets:
	case <-time.After(10 * time.Second):
		t.Fatal("no stream request with the long token reached the gateway")
	}
	select {
	case <-g.wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("the GET was never written to")
	}
	return g
}

// forgotten waits, collecting garbage, until nothing holds the GET's token any more, and
// fails if that is not so within a generous deadline or only once its handler returned.
func (g watchedGet) forgotten(t *testing.T, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for g.token.Value() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the bearer token is still reachable in the gateway while the stream runs", what)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // between collections, not waiting for an event
	}
	select {
	case <-g.returned:
		t.Fatalf("%s: the stream ended before its token was forgotten; the test proves nothing", what)
	default:
	}
}

// watchedFixture is a fixture that accepts longToken, served behind a tokenWatch.
func watchedFixture(t *testing.T, mods ...func(*Options)) (*fixture, *tokenWatch) {
	f := newFixture(t, append([]func(*Options){withLongTokens}, mods...)...)
	tw := &tokenWatch{next: f.gw.Handler(), gets: make(chan watchedGet, 4)}
	srv := httptest.NewServer(tw)
	t.Cleanup(func() { // the gateway first: it ends the calls that hold handlers open
		f.gw.BeginShutdown()
		f.gw.Close()
		srv.Close()
	})
	wrapped := *f
	wrapped.url = srv.URL + "/mcp"
	return &wrapped, tw
}

// An idle session stream holds nothing that reaches its bearer token: not the request's
// headers (forgetBearer), and not the context the authenticator put the verified token in
// (serveStream keeps only its done channel).
func TestIdleStreamHoldsNoToken(t *testing.T) {
	f, tw := watchedFixture(t)
	c := f.client(longToken)
	c.open()
	st := c.openStream()
	tw.nextGet(t).forgotten(t, "session stream")
	// And the stream still works: a message for the session reaches it.
	if text := toolText(t, c.callTool("1", "echo", map[string]any{"text": "after"}).only(t)); text != "after" {
		t.Fatalf("call with the stream open: %q", text)
	}
	if st.ended(0) {
		t.Fatal("the stream ended")
	}
}

// A GET that resumes a POST's answer stream (Last-Event-ID) can run as long as the call
// does: it, too, must not keep its request's token reachable, neither in the headers nor in
// the request's context.
func TestResumedPostStreamHoldsNoToken(t *testing.T) {
	f, tw := watchedFixture(t)
	c := f.client(longToken)
	c.open()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "r-1", "method": "tools/call", "params": slowParams(30, true, "tok")})
	ctx, cut := context.WithCancel(context.Background())
	defer cut()
	resp := c.postStreaming(ctx, string(body))
	evs := readEvents(resp.Body)
	nextEvent(t, evs) // priming
	first, _ := nextEvent(t, evs)
	if first.id == "" {
		t.Fatalf("the first progress has no id: %+v", first)
	}
	cut()
	resp.Body.Close()

	gctx, gcancel := context.WithCancel(context.Background())
	t.Cleanup(gcancel)
	gresp := c.resumeStream(gctx, first.id)
	defer gresp.Body.Close()
	g := tw.nextGet(t)
	g.forgotten(t, fmt.Sprintf("resumed POST stream after %s", first.id))
	// Holding only the request's done channel, the stream still ends when its client goes,
	// long before the call does (here the next progress write would end it too).
	gcancel()
	select {
	case <-g.returned:
	case <-time.After(10 * time.Second):
		t.Fatal("the resumed stream outlived its client")
	}
}
