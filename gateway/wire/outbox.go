package wire

import (
	"log/slog"
	"sync"
	"time"
)

// OutboxSize and outboxBytes bound a session's queue, oldest first; one larger message stays.
const (
	OutboxSize  = 256
	outboxBytes = 16 << 20
)

// Outbox is one session's queue for its GET stream; the newest stream (generation) wins.
type Outbox struct {
	mu                     sync.Mutex
	queue                  [][]byte // oldest first; made with the first message
	bytes                  int
	dropped                uint64
	gen                    uint64 // generation of the current stream; 0 = none ever attached
	closed                 bool   // the session ended: no stream is current, a later one neither
	streams                int    // streams attached and not yet detached (0 or 1 once settled)
	wake                   news   // news for the stream, for TakeLogged
	onDrop                 func()
	onMove                 func()
	store                  *EventStore
	lostDropped, lostMoved int
	lossLogged             time.Time
}

// NewOutbox makes a session's outbox; onDrop and onMove, if set, count its losses.
func NewOutbox(onDrop, onMove func()) *Outbox {
	return &Outbox{onDrop: onDrop, onMove: onMove, store: NewEventStore()}
}

// Push queues a message; it reports how many were dropped to make room.
func (o *Outbox) Push(msg []byte) (dropped int) {
	o.mu.Lock()
	for len(o.queue) > 0 && (len(o.queue) == OutboxSize || o.bytes+len(msg) > outboxBytes) {
		o.bytes -= len(o.queue[0])
		o.queue[0] = nil
		o.queue = o.queue[1:]
		o.dropped++
		dropped++
	}
	o.queue = append(o.queue, msg)
	o.bytes += len(msg)
	o.wake.signal()
	o.mu.Unlock()
	for i := 0; i < dropped && o.onDrop != nil; i++ {
		o.onDrop()
	}
	return dropped
}

// Attach registers a new stream, superseding any other, and returns its generation.
func (o *Outbox) Attach() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gen++
	o.streams++
	o.wake.signal() // wakes the superseded stream so it can end
	return o.gen
}

func (o *Outbox) Detach() {
	o.mu.Lock()
	o.streams--
	o.mu.Unlock()
}

// Current is the generation of the newest stream.
func (o *Outbox) Current() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.gen
}

func (o *Outbox) HasStream() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.streams > 0
}

// TakenEvent is a message taken for the session's stream, with its logged event id.
type TakenEvent struct {
	ID   string
	Data []byte
}

// TakeLogged takes the queued messages if gen is current, each logged for resumption under the
// lock: a stream resuming this one finds every message it took, written or not.
func (o *Outbox) TakeLogged(gen uint64) (evs []TakenEvent, wake <-chan struct{}, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if gen != o.gen || o.closed {
		return nil, nil, false
	}
	if len(o.queue) > 0 {
		evs = make([]TakenEvent, 0, len(o.queue))
		for _, msg := range o.queue {
			evs = append(evs, TakenEvent{ID: o.store.ID(0, o.store.Append(0, msg, false)), Data: msg})
		}
		clear(o.queue) // the array is kept, not what it held
		o.queue, o.bytes = o.queue[:0], 0
	}
	return evs, o.wake.wait(), true
}

func (o *Outbox) Store() *EventStore { return o.store }

// Close wakes every stream for the last time; one attached later ends at its first take.
func (o *Outbox) Close() {
	o.mu.Lock()
	o.gen++
	o.closed = true
	o.wake.signal()
	o.mu.Unlock()
}

// LossLogInterval spaces a session's loss lines: else a client not reading costs one a message.
const LossLogInterval = 10 * time.Second

// Moved records a message moved here from a full request stream.
func (o *Outbox) Moved(log *slog.Logger) {
	if o.onMove != nil {
		o.onMove()
	}
	o.noteLosses(log, 0, 1)
}

// NoteDropped records messages Push dropped.
func (o *Outbox) NoteDropped(log *slog.Logger, n int) {
	if n > 0 {
		o.noteLosses(log, n, 0)
	}
}

// noteLosses logs the losses since the last line, at most once per LossLogInterval.
func (o *Outbox) noteLosses(log *slog.Logger, dropped, moved int) {
	o.mu.Lock()
	o.lostDropped += dropped
	o.lostMoved += moved
	now := time.Now()
	if !o.lossLogged.IsZero() && now.Sub(o.lossLogged) < LossLogInterval {
		o.mu.Unlock()
		return
	}
	d, m, total := o.lostDropped, o.lostMoved, o.dropped
	o.lossLogged, o.lostDropped, o.lostMoved = now, 0, 0
	o.mu.Unlock()
	log.Warn("client not reading: session outbox full or request stream full; messages dropped or moved",
		"dropped", d, "moved_to_session_stream", m, "dropped_total", total,
		"next_report_after", LossLogInterval)
}
