package auth

import (
	"log/slog"
	"testing"
	"testing/synctest"
	"time"
)

// TestLoaderBacksOffThenStops runs the background loader against an identity provider
// that is down, in a synctest bubble so its minutes of backoff pass at once: each retry
// waits between half and all of a backoff that doubles from loadRetryMin up to
// loadRetryMax, the attempts are numbered on, and once the provider is back the loader
// loads the keys and ends by itself.
func TestLoaderBacksOffThenStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeIdP(t, keyring().rsa1)
		f.up.Store(false)
		h := &records{}
		s := fakeIdPKeySet(f, slog.New(h), time.Now)
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.load(t.Context())
		}()

		time.Sleep(3 * time.Minute) // fake time: about a dozen retries
		synctest.Wait()
		retries := h.find("auth: retrying signing keys")
		if len(retries) < 8 {
			t.Fatalf("%d retries in 3 minutes, want at least 8", len(retries))
		}
		backoff := loadRetryMin
		for n, r := range retries {
			if got, want := attr(r, "attempt").Int64(), int64(n+2); got != want {
				t.Errorf("retry %d: attempt %d, want %d", n, got, want)
			}
			wait := attr(r, "in").Duration()
			if wait < backoff/2 || wait > backoff {
				t.Errorf("retry %d: waits %v, want within [%v, %v]", n, wait, backoff/2, backoff)
			}
			backoff = min(2*backoff, loadRetryMax)
		}
		if backoff != loadRetryMax {
			t.Errorf("backoff reached %v, want the cap %v", backoff, loadRetryMax)
		}

		f.up.Store(true)
		time.Sleep(loadRetryMax)
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("the loader is still running after the keys loaded")
		}
		if _, err := s.Key(t.Context(), "k1"); err != nil {
			t.Errorf("Key after the loader ended: %v", err)
		}
	})
}
