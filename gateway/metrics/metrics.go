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

	// The series every call touches, kept once looked up: WithLabelValues hashes its labels
	// and formats the status on every call. Labels come from fixed sets (methods, outcomes,
	// HTTP statuses), so the caches stay small.
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

// seriesCache keeps the series of a vector by their labels, looked up once.
type seriesCache[K comparable, S any] struct {
	mu     sync.RWMutex
	series map[K]S
}

// get is k's series, made by lookUp the first time.
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

// New registers the gateway's metrics with reg.
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

// methods is the fixed set of JSON-RPC methods that get their own label value.
var methods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/subscribe": true, "resources/unsubscribe": true, "prompts/list": true, "prompts/get": true,
	"completion/complete": true, "logging/setLevel": true, "notifications/initialized": true,
	"notifications/cancelled": true, "notifications/progress": true, "notifications/roots/list_changed": true,
	"server/discover": true,
}

// MethodLabel is the label value of JSON-RPC method m: itself when it is one of a fixed set,
// "response" for a message with no method, else "other".
func MethodLabel(m string) string {
	if methods[m] {
		return m
	}
	if m == "" {
		return "response"
	}
	return "other"
}

// Request counts an MCP POST of method (a MethodLabel) answered with code after d. A traced
// request's duration carries its trace id as an exemplar ("" when not traced).
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

// SessionOpened counts an attempt to open a session by result; "ok" opens one.
func (m *Metrics) SessionOpened(result string) {
	if m == nil {
		return
	}
	m.sessionsOpened.WithLabelValues(result).Inc()
	if result == "ok" {
		m.sessionsOpen.Inc()
	}
}

// SessionClosed counts the end of an open session by reason.
func (m *Metrics) SessionClosed(reason string) {
	if m == nil {
		return
	}
	m.sessionsClosed.WithLabelValues(reason).Inc()
	m.sessionsOpen.Dec()
}

// Pool is the pool's instruments, registered with the gateway's.
func (m *Metrics) Pool() *pool.Metrics {
	if m == nil {
		return nil
	}
	return m.pool
}

// ToolCall counts a tools/call by outcome.
func (m *Metrics) ToolCall(outcome string) {
	if m == nil {
		return
	}
	m.byOutcome.get(outcome, func() prometheus.Counter { return m.toolCalls.WithLabelValues(outcome) }).Inc()
}

// StreamOpened counts a session GET stream's start.
func (m *Metrics) StreamOpened() {
	if m != nil {
		m.sseStreams.Inc()
	}
}

// StreamClosed counts a session GET stream's end.
func (m *Metrics) StreamClosed() {
	if m != nil {
		m.sseStreams.Dec()
	}
}

// OutboxDropped counts a message dropped from a full session outbox.
func (m *Metrics) OutboxDropped() {
	if m != nil {
		m.outboxDrops.Inc()
	}
}

// StreamMessageMoved counts a message for a full request stream sent to the session stream.
func (m *Metrics) StreamMessageMoved() {
	if m != nil {
		m.streamMoves.Inc()
	}
}
