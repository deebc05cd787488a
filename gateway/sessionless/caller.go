package sessionless

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

const (
	// eventBuffer bounds the messages a call's stream holds for the client; beyond it
	// notifications are dropped (the call's answer never is: it travels apart).
	eventBuffer = 64
	// maxWorkerRequestsPerCall bounds the worker requests one call holds for the bridge.
	maxWorkerRequestsPerCall = 16
)

// caller is one request of the era attached to its user's worker while it runs: a short-lived
// pool caller. It takes its own call's messages (progress, and log lines when the request asked
// for them) and nothing of the user's other callers.
type caller struct {
	attachment
	events   wire.EventQueue       // progress and log lines, at most eventBuffer unread
	requests chan *jsonrpc.Message // the worker's requests for the bridge (bridge.go)
	member   atomic.Pointer[pool.Member]
	logLevel atomic.Int32 // the current request's _meta logLevel (pool.LogLevel; -1: none): a bridge retry's its own (resume)
}

// newCaller is a caller of a request whose _meta logLevel is level ("" for none).
func newCaller(level string) *caller {
	// A queue that grows with the events, not a channel of eventBuffer slots made on every
	// call, though most calls send none.
	c := &caller{attachment: newAttachment(), events: wire.NewEventQueue(),
		requests: make(chan *jsonrpc.Message, maxWorkerRequestsPerCall)}
	c.logLevel.Store(int32(pool.LogLevel(level)))
	return c
}

// attachment is what the era's pool callers share. CanTakeRequest is false: a 2026-07-28
// client has no stream outside its own call, so it is never asked a worker's request that
// belongs to no call of its (pool.workerRequest); within its call, the bridge parks it.
type attachment struct {
	detached chan struct{} // closed when the worker lets go
	once     sync.Once
	created  time.Time
}

func newAttachment() attachment {
	return attachment{detached: make(chan struct{}), created: time.Now()}
}

func (c *attachment) LastActive() time.Time { return c.created }
func (c *attachment) CanTakeRequest() bool  { return false }
func (c *attachment) Detached(string)       { c.once.Do(func() { close(c.detached) }) }

// Deliver keeps a message of this call's; it never blocks. A worker request goes to the bridge:
// 2026-07-28 has no server-to-client requests on a stream.
func (c *caller) Deliver(d pool.Delivery) {
	if d.Call != nil && d.Call.Tag() != c {
		return
	}
	if d.Request {
		req, err := jsonrpc.Parse(d.Message, jsonrpc.Options{})
		if err != nil {
			return
		}
		if d.Call != nil && inputRequest(req.Method) {
			select {
			case c.requests <- req:
				return
			default:
			}
		}
		m := c.member.Load()
		switch {
		case m == nil:
		case d.Call == nil || !inputRequest(req.Method):
			// Of no call of this one's (the pool sends none such, CanTakeRequest): a 2026-07-28
			// client is asked only within its own call. Or one no input-required result can
			// carry (a ping: a go-sdk server's KeepAlive): the client cannot answer it. Answered
			// as if asked and not agreed.
			m.Decline(req.ID)
		default:
			m.Refuse(req.ID, "too many requests to the client in one call")
		}
		return
	}
	// The user's stream-level notifications are for subscriptions/listen.
	if d.Call != nil && c.takes(d.Message) {
		c.events.Push(d.Message, eventBuffer) // false: the buffer is full and the message dropped
	}
}

// takes reports whether a worker's notification about the call goes to the client: a log line
// only when the request asked for a level (_meta logLevel), as 2026-07-28 says, and only at
// that level or a more severe one, as a session's lines are by its logging/setLevel (a legacy
// worker logs to every session that set one, whichever request it is about); never a worker's
// withdrawal of its question (notifications/cancelled), which 2026-07-28 has no request for:
// the bridge does not ask it (Wait.Park).
func (c *caller) takes(msg []byte) bool {
	m, err := jsonrpc.Parse(msg, jsonrpc.Options{})
	switch {
	case err != nil:
		return true
	case m.Method == "notifications/message":
		least := c.logLevel.Load()
		return least >= 0 && pool.LevelOf(m.Params) >= int(least)
	}
	return m.Method != "notifications/cancelled"
}

// inputRequest reports whether a legacy worker's request within a call is one an input-required
// result can put to a 2026-07-28 client: one that needs a client capability (elicitation,
// sampling or roots: declared.lacks). Anything else (ping, or a method MCP does not name) the
// client could not answer, and the call would wait for nothing.
func inputRequest(method string) bool { return declared{}.lacks(method) != "" }
