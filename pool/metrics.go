package pool

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/gemgate/gemgate/worker"
)

// Metrics are the pool's Prometheus instruments; labels come from fixed sets only.
type Metrics struct {
	running   *prometheus.GaugeVec
	startTime prometheus.Histogram
	exits     *prometheus.CounterVec
	perWorker prometheus.Histogram
	queue     prometheus.Gauge
}

// NewMetrics registers the pool's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		running: f.NewGaugeVec(prometheus.GaugeOpts{Name: "gemgate_workers_running",
			Help: "Worker processes running now, by access mode."}, []string{"mode"}),
		startTime: f.NewHistogram(prometheus.HistogramOpts{Name: "gemgate_worker_start_seconds",
			Help: "Time from starting a worker to its answer to initialize.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		exits: f.NewCounterVec(prometheus.CounterOpts{Name: "gemgate_worker_exits_total",
			Help: "Worker processes ended, by result."}, []string{"result"}),
		perWorker: f.NewHistogram(prometheus.HistogramOpts{Name: "gemgate_worker_sessions",
			Help: "Sessions attached to a worker, observed at each attach.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64}}),
		queue: f.NewGauge(prometheus.GaugeOpts{Name: "gemgate_worker_queue_depth",
			Help: "Calls waiting for a worker's turn, over all workers."}),
	}
	for _, mode := range []string{"read_only", "read_write"} {
		m.running.WithLabelValues(mode) // both series exist from the start
	}
	for _, result := range []string{"stopped", "hung", "exited"} {
		m.exits.WithLabelValues(result) // so does every result: a dashboard reads 0, not "no data"
	}
	return m
}

func modeLabel(readOnly bool) string {
	if readOnly {
		return "read_only"
	}
	return "read_write"
}

func (m *Metrics) started(readOnly bool, d time.Duration) {
	m.running.WithLabelValues(modeLabel(readOnly)).Inc()
	m.startTime.Observe(d.Seconds())
}

// exited counts a worker's end: stopped by gemgate (err nil), hung, or exited on its own.
func (m *Metrics) exited(readOnly bool, err error) {
	m.running.WithLabelValues(modeLabel(readOnly)).Dec()
	result := "stopped"
	switch {
	case errors.Is(err, worker.ErrHung):
		result = "hung"
	case err != nil:
		result = "exited"
	}
	m.exits.WithLabelValues(result).Inc()
}

// startFailed counts a worker that was started but never got through its handshake.
func (m *Metrics) startFailed() { m.exits.WithLabelValues("stopped").Inc() }

func (m *Metrics) attached(n int) { m.perWorker.Observe(float64(n)) }

func (m *Metrics) queued(delta int) { m.queue.Add(float64(delta)) }
