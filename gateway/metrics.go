package gateway

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/gemgate/gemgate/pool"
)

// Metrics are the gateway's Prometheus instruments. Labels come from fixed sets only: never a
// user, a session id, a token or a name a client chose.
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
	seriesMu  sync.RWMutex
	byRequest map[requestLabels]requestSeries
	byOutcome map[string]prometheus.Counter
}

type requestLabels struct {
	method string
	code   int
}

type requestSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// NewMetrics registers the gateway's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
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

func methodLabel(m string) string {
	if methods[m] {
		return m
	}
	if m == "" {
		return "response"
	}
	return "other"
}

func (m *Metrics) request(method string, code int, d time.Duration) {
	if m == nil {
		return
	}
	k := requestLabels{method, code}
	m.seriesMu.RLock()
	rs, ok := m.byRequest[k]
	m.seriesMu.RUnlock()
	if !ok {
		rs = requestSeries{m.requests.WithLabelValues(method, strconv.Itoa(code)), m.requestDuration.WithLabelValues(method)}
		m.seriesMu.Lock()
		if m.byRequest == nil {
			m.byRequest = map[requestLabels]requestSeries{}
		}
		m.byRequest[k] = rs
		m.seriesMu.Unlock()
	}
	rs.count.Inc()
	rs.duration.Observe(d.Seconds())
}

func (m *Metrics) sessionOpened(result string) {
	if m == nil {
		return
	}
	m.sessionsOpened.WithLabelValues(result).Inc()
	if result == "ok" {
		m.sessionsOpen.Inc()
	}
}

func (m *Metrics) sessionClosed(reason string) {
	if m == nil {
		return
	}
	m.sessionsClosed.WithLabelValues(reason).Inc()
	m.sessionsOpen.Dec()
}

// poolMetrics are the pool's instruments, registered with the gateway's.
func (m *Metrics) poolMetrics() *pool.Metrics {
	if m == nil {
		return nil
	}
	return m.pool
}

func (m *Metrics) toolCall(outcome string) {
	if m == nil {
		return
	}
	m.seriesMu.RLock()
	c, ok := m.byOutcome[outcome]
	m.seriesMu.RUnlock()
	if !ok {
		c = m.toolCalls.WithLabelValues(outcome)
		m.seriesMu.Lock()
		if m.byOutcome == nil {
			m.byOutcome = map[string]prometheus.Counter{}
		}
		m.byOutcome[outcome] = c
		m.seriesMu.Unlock()
	}
	c.Inc()
}

func (m *Metrics) streamOpened() {
	if m != nil {
		m.sseStreams.Inc()
	}
}

func (m *Metrics) streamClosed() {
	if m != nil {
		m.sseStreams.Dec()
	}
}

func (m *Metrics) outboxDropped() {
	if m != nil {
		m.outboxDrops.Inc()
	}
}

func (m *Metrics) streamMessageMoved() {
	if m != nil {
		m.streamMoves.Inc()
	}
}
