package gateway

import (
	"sync"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// modernEventBuffer bounds the messages a modern call's stream holds for the client; beyond
// it the oldest notifications are dropped (the call's answer never is: it travels apart).
const modernEventBuffer = 64

// modernCaller is one modern request attached to its user's worker for as long as it runs: a
// short-lived pool caller. It takes the messages that belong to its own call (progress, and
// log lines when the request asked for them) and nothing of the user's other callers.
type modernCaller struct {
	events    chan []byte
	detached  chan struct{}
	once      sync.Once
	wantsLogs bool
	created   time.Time

	mu      sync.Mutex
	dropped int
}

func newModernCaller(wantsLogs bool) *modernCaller {
	return &modernCaller{events: make(chan []byte, modernEventBuffer), detached: make(chan struct{}),
		wantsLogs: wantsLogs, created: time.Now()}
}

// Deliver keeps a message of this call's; it never blocks. A worker request is never routed
// here (the caller declares no client capabilities to the pool and cannot take requests):
// 2026-07-28 has no server-to-client requests on a stream.
func (c *modernCaller) Deliver(d pool.Delivery) {
	if d.Request || d.Call == nil || d.Call.Tag() != c {
		return
	}
	if !c.wantsLogs && isLogMessage(d.Message) {
		return
	}
	select {
	case c.events <- d.Message:
	default:
		c.mu.Lock()
		c.dropped++
		c.mu.Unlock()
	}
}

func (c *modernCaller) LastActive() time.Time { return c.created }
func (c *modernCaller) CanTakeRequest() bool  { return false }
func (c *modernCaller) Detached(string)       { c.once.Do(func() { close(c.detached) }) }

// isLogMessage reports whether an encoded worker message is a notifications/message.
func isLogMessage(b []byte) bool {
	m, err := jsonrpc.Parse(b)
	return err == nil && m.Method == "notifications/message"
}
