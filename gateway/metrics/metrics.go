package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/gemgate/gemgate/pool"
)

// Metrics are the gateway's Prometheus instruments. A nil *Metrics counts nothing.
type Metrics struct {
	sessionsOpen    prometheus.Gauge
	sessionsOpened  *prometheus.CounterVec
	sessionsClosed  *prometheus.CounterVec
	pool            *pool.Metrics
	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	toolCalls       *prometheus.CounterVec
	sseStreams      prometheus.Gauge
	outboxDrops     prometheus.Counter
	streamMoves     prometheus.Counter

	// The series every call touches, kept once looked up (WithLabelValues hashes and formats
	// on every call); labels come from fixed sets, so the caches stay small.
	byRequest seriesCache[requestLabels, requestSeries]
	byOutcome seriesCache[string, prometheus.Counter]
}

type requestLabels struct {
	method string
	code   int
}

type requestSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

type seriesCache[K comparable, S any] struct {
	mu     sync.RWMutex
	series map[K]S
}

func (c *seriesCache[K, S]) get(k K, lookUp func() S) S {
	c.mu.RLock()
	s, ok := c.series[k]
	c.mu.RUnlock()
	if !ok {
		s = lookUp()
		c.mu.Lock()
		if c.series == nil {
			c.series = map[K]S{}
		}
		c.series[k] = s
		c.mu.Unlock()
	}
	return s
}

func New(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		sessionsOpen: f.NewGauge(prometheus.GaugeOpts{Name: "gemgate_sessions_open", Help: "Sessions open now."}),
		sessionsOpened: f.NewCounterVec(prometheus.CounterOpts{Name: "gemgate_sessions_opened_total",
			Help: "Attempts to open a session, by result."}, []string{"result"}),
		sessionsClosed: f.NewCounterVec(prometheus.CounterOpts{Name: "gemgate_sessions_closed_total",
			Help: "Sessions ended, by reason."}, []string{"reason"}),
		pool: pool.NewMetrics(reg),
		requests: f.NewCounterVec(prometheus.CounterOpts{Name: "gemgate_requests_total",
			Help: "MCP POST requests, by JSON-RPC method and HTTP status."}, []string{"method", "code"}),
		requestDuration: f.NewHistogramVec(prometheus.HistogramOpts{Name: "gemgate_request_duration_seconds",
			Help: "Time to answer an MCP POST, by JSON-RPC method.", Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14)}, []string{"method"}),
		toolCalls: f.NewCounterVec(prometheus.CounterOpts{Name: "gemgate_tool_calls_total",
			Help: "tools/call requests, by outcome."}, []string{"outcome"}),
		sseStreams:  f.NewGauge(prometheus.GaugeOpts{Name: "gemgate_sse_streams_open", Help: "Session GET streams open now."}),
		outboxDrops: f.NewCounter(prometheus.CounterOpts{Name: "gemgate_outbox_dropped_total", Help: "Messages dropped from full session outboxes."}),
		streamMoves: f.NewCounter(prometheus.CounterOpts{Name: "gemgate_request_stream_moved_total",
			Help: "Messages for a request's SSE stream sent to the session stream instead, because the request stream was full."}),
	}
}

var methods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/subscribe": true, "resources/unsubscribe": true, "prompts/list": true, "prompts/get": true,
	"completion/complete": true, "logging/setLevel": true, "notifications/initialized": true,
	"notifications/cancelled": true, "notifications/progress": true, "notifications/roots/list_changed": true,
	"server/discover": true, "subscriptions/listen": true,
}

// MethodLabel is m itself when one of a fixed set, "response" for no method, else "other".
func MethodLabel(m string) string {
	if methods[m] {
		return m
	}
	if m == "" {
		return "response"
	}
	return "other"
}

// Request counts an MCP POST; a traced one's duration carries its trace id as an exemplar.
func (m *Metrics) Request(method string, code int, d time.Duration, traceID string) {
	if m == nil {
		return
	}
	rs := m.byRequest.get(requestLabels{method, code}, func() requestSeries {
		return requestSeries{
			count:    m.requests.WithLabelValues(method, strconv.Itoa(code)),
			duration: m.requestDuration.WithLabelValues(method),
		}
	})
	rs.count.Inc()
	if eo, ok := rs.duration.(prometheus.ExemplarObserver); ok && traceID != "" {
		eo.ObserveWithExemplar(d.Seconds(), prometheus.Labels{"trace_id": traceID})
		return
	}
	rs.duration.Observe(d.Seconds())
}

func (m *Metrics) SessionOpened(result string) {
	if m == nil {
		return
	}
	m.sessionsOpened.WithLabelValues(result).Inc()
	if result == "ok" {
		m.sessionsOpen.Inc()
	}
}

func (m *Metrics) SessionClosed(reason string) {
	if m == nil {
		return
	}
	m.sessionsClosed.WithLabelValues(reason).Inc()
	m.sessionsOpen.Dec()
}

func (m *Metrics) Pool() *pool.Metrics {
	if m == nil {
		return nil
	}
	return m.pool
}

func (m *Metrics) ToolCall(outcome string) {
	if m == nil {
		return
	}
	m.byOutcome.get(outcome, func() prometheus.Counter { return m.toolCalls.WithLabelValues(outcome) }).Inc()
}

func (m *Metrics) StreamOpened() {
	if m != nil {
		m.sseStreams.Inc()
	}
}

func (m *Metrics) StreamClosed() {
	if m != nil {
		m.sseStreams.Dec()
	}
}

func (m *Metrics) OutboxDropped() {
	if m != nil {
		m.outboxDrops.Inc()
	}
}

func (m *Metrics) StreamMessageMoved() {
	if m != nil {
		m.streamMoves.Inc()
	}
}
