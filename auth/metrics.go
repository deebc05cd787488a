package auth

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics counts what authentication refuses and how the issuer's keys are fetched; a nil
// *Metrics counts nothing. Labels come from fixed sets: no token, claim or user is one.
type Metrics struct {
	failures  *prometheus.CounterVec
	refreshes *prometheus.CounterVec
}

// NewMetrics registers authentication's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		failures: f.NewCounterVec(prometheus.CounterOpts{Name: "gemgate_auth_failures_total",
			Help: "Requests refused by authentication, by reason."}, []string{"reason"}),
		refreshes: f.NewCounterVec(prometheus.CounterOpts{Name: "gemgate_jwks_refresh_total",
			Help: "Fetches of the issuer's signing keys, by result."}, []string{"result"}),
	}
}

// Failed counts a request refused by authentication; reason comes from a fixed set.
func (m *Metrics) Failed(reason string) {
	if m != nil {
		m.failures.WithLabelValues(reason).Inc()
	}
}

// KeysFetched counts a fetch of the issuer's keys.
func (m *Metrics) KeysFetched(err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.refreshes.WithLabelValues(result).Inc()
}
