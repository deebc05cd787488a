package auth

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.Failed("expired")
	m.Failed("expired")
	m.KeysFetched(nil)
	m.KeysFetched(errors.New("down"))
	if got := testutil.ToFloat64(m.failures.WithLabelValues("expired")); got != 2 {
		t.Errorf("auth failures expired = %v, want 2", got)
	}
	if ok, bad := testutil.ToFloat64(m.refreshes.WithLabelValues("ok")), testutil.ToFloat64(m.refreshes.WithLabelValues("error")); ok != 1 || bad != 1 {
		t.Errorf("key fetches ok %v, error %v; want 1 and 1", ok, bad)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
	var none *Metrics // a nil Metrics counts nothing and does not panic
	none.Failed("expired")
	none.KeysFetched(nil)
}

// TestJWKSRefreshResultLabel: a good fetch of the issuer's keys counts under result="ok" and
// a failed one under result="error", told apart with counts that differ (two good, one bad),
// and counted by the verifier's own fetches: at start, at a rotation, and at a key set that
// does not parse.
func TestJWKSRefreshResultLabel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m := NewMetrics(reg)
		counts := func() (ok, bad float64) {
			return testutil.ToFloat64(m.refreshes.WithLabelValues("ok")), testutil.ToFloat64(m.refreshes.WithLabelValues("error"))
		}

		kr := keyring()
		iss := newTestIssuer(t, kr.rsa1)
		v := newTestVerifier(t, iss, func(c *Config) { c.OnKeyRefresh = m.KeysFetched })
		ctx := context.Background()
		if ok, bad := counts(); ok != 1 || bad != 0 {
			t.Fatalf("after the fetch at start: ok %v, error %v; want 1, 0", ok, bad)
		}

		iss.publish(t, kr.rsa1, kr.rsa2)
		time.Sleep(DefaultKeyRefreshInterval)
		if _, err := v.Verify(ctx, token(t, kr.rsa2, iss.claims(time.Now(), nil), nil)); err != nil {
			t.Fatalf("a token of the rotated-in key: %v", err)
		}
		if ok, bad := counts(); ok != 2 || bad != 0 {
			t.Fatalf("after a good refresh: ok %v, error %v; want 2, 0", ok, bad)
		}

		iss.mu.Lock()
		iss.jwks = []byte("this is not a key set")
		iss.mu.Unlock()
		time.Sleep(DefaultKeyRefreshInterval)
		if _, err := v.Verify(ctx, token(t, kr.rsa3, iss.claims(time.Now(), nil), nil)); err == nil {
			t.Fatal("a token of an unpublished key verified")
		}
		if ok, bad := counts(); ok != 2 || bad != 1 {
			t.Fatalf("after a refresh that failed: ok %v, error %v; want 2, 1", ok, bad)
		}

		// The same, called directly.
		m2 := NewMetrics(prometheus.NewRegistry())
		m2.KeysFetched(nil)
		m2.KeysFetched(nil)
		m2.KeysFetched(nil)
		m2.KeysFetched(errors.New("down"))
		if ok, bad := testutil.ToFloat64(m2.refreshes.WithLabelValues("ok")), testutil.ToFloat64(m2.refreshes.WithLabelValues("error")); ok != 3 || bad != 1 {
			t.Errorf("KeysFetched: ok %v, error %v; want 3, 1", ok, bad)
		}
	})
}
