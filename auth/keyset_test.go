package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowJWKS serves a JWKS that answers only when released, counting fetches.
type slowJWKS struct {
	srv      *httptest.Server
	body     atomic.Pointer[[]byte]
	fetches  atomic.Int32
	entered  chan struct{} // one value per fetch that reached the handler
	release  chan struct{} // closed to let fetches answer
	holdNext atomic.Bool
}

func newSlowJWKS(t *testing.T, keys ...signingKey) *slowJWKS {
	t.Helper()
	s := &slowJWKS{entered: make(chan struct{}, 100), release: make(chan struct{})}
	iss := newTestIssuer(t, keys...) // only for its JWKS document
	iss.mu.Lock()
	body := iss.jwks
	iss.mu.Unlock()
	s.body.Store(&body)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		if s.holdNext.Load() {
			s.entered <- struct{}{}
			select {
			case <-s.release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*s.body.Load())
	}))
	t.Cleanup(s.srv.Close)
	t.Cleanup(s.unblock)
	return s
}

func (s *slowJWKS) unblock() {
	select {
	case <-s.release:
	default:
		close(s.release)
	}
}

func (s *slowJWKS) publish(t *testing.T, keys ...signingKey) {
	iss := newTestIssuer(t, keys...)
	iss.mu.Lock()
	body := iss.jwks
	iss.mu.Unlock()
	s.body.Store(&body)
}

// A JWKS fetch waiting on a slow issuer must not hold up other requests beyond their own
// context, and however many requests name unknown kids at once, one fetch serves them.
func TestJWKSFetchDoesNotHoldRequests(t *testing.T) {
	kr := keyring()
	jwks := newSlowJWKS(t, kr.rsa1)
	iss := newTestIssuer(t, kr.rsa1) // claims only
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, func(c *Config) {
		c.JWKSURL = jwks.srv.URL
		c.HTTPClient = jwks.srv.Client()
		c.CacheSize = -1
	})
	if got := jwks.fetches.Load(); got != 1 {
		t.Fatalf("fetches at start = %d, want 1", got)
	}
	jwks.publish(t, kr.rsa1, kr.rsa2)
	jwks.holdNext.Store(true)
	clock.advance(DefaultKeyRefreshInterval)

	// Many requests with a new kid start (and wait on) one fetch.
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		tok := token(t, kr.rsa2, iss.claims(clock.Now(), map[string]any{"jti": fmt.Sprint(i)}), nil)
		wg.Go(func() { _, errs[i] = v.Verify(context.Background(), tok) })
	}
	select {
	case <-jwks.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no JWKS fetch started")
	}

	// While it is in flight, a request with a short context gives up on time.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	tok := token(t, kr.rsa2, iss.claims(clock.Now(), map[string]any{"jti": "short"}), nil)
	start := time.Now()
	go func() { _, err := v.Verify(ctx, tok); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("short request: err = %v, want its context's deadline error", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("short request returned after %v", d)
		}
	case <-time.After(3 * time.Second):
		t.Error("a request with a 100ms context still waits on the JWKS fetch after 3s")
	}

	jwks.unblock()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	if got := jwks.fetches.Load(); got != 2 {
		t.Errorf("fetches = %d, want 2 (one at start, one for the new kid)", got)
	}
}
