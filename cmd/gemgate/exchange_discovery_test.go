package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth/exchange"
)

// TestExchangeDiscoveryHoldsNoOtherCaller: the lazy exchanger finds the token endpoint by
// discovery under its mutex, so while the issuer's discovery hangs (up to its 10 s bound)
// every other worker start waits on that mutex, deaf to its own context: a request whose
// client gave up, or whose deadline passed, still waits its turn, and with several hanging
// attempts in a row the waits add up, one user after another.
func TestExchangeDiscoveryHoldsNoOtherCaller(t *testing.T) {
	entered := make(chan struct{}, 8)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	defer close(release)
	l, err := newLazyExchanger(srv.URL, exchange.Config{ClientID: "gemgate", ClientSecret: "s3cret", Audience: "gemstone"}, false)
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan struct{})
	go func() {
		defer close(first)
		_, _, _ = l.Exchange(context.Background(), "subject-token-1")
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err = l.Exchange(ctx, "subject-token-2")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a caller with a 200ms deadline waited %v behind another caller's discovery (err %v)", d.Round(time.Second), err)
	}
}
