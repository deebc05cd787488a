package auth

import (
	"errors"
	"testing"

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
