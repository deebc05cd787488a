package wire

import (
	"log/slog"
	"sync"
	"time"
)

// OutboxSize and outboxBytes bound what a session holds for a client that is not reading:
// the oldest messages go when a new one would overflow either. A single message larger than
// outboxBytes is still kept, alone.
const (
	OutboxSize  = 256
	outboxBytes = 16 << 20
)

// Outbox is one session's queue of server-to-client messages waiting for its GET stream. It
// also hands out stream generations: the newest GET stream wins, and a superseded stream
// learns it on its next wake-up.
type Outbox struct {
	mu      sync.Mutex
	queue   [][]byte // oldest first; made with the first message, as most sessions get none
	bytes   int      // total size of the queued messages
	dropped uint64
	gen     uint64        // generation of the current stream; 0 = none ever attached
	streams int           // streams attached and not yet detached (0 or 1 once settled)
	wake    chan struct{} // closed and replaced whenever there is news for the stream
	onDrop  func()
	onMove  func()
	store   *EventStore // what the session's streams wrote, for replay on Last-Event-ID
	// The losses not yet logged, and when the last line was written (zero: never).
	lostDropped, lostMoved int
	lossLogged             time.Time
}

// NewOutbox makes a session's outbox; onDrop and onMove, if set, count each message dropped
// from it and each message moved to it from a full request stream.
func NewOutbox(onDrop, onMove func()) *Outbox {
	return &Outbox{wake: make(chan struct{}), onDrop: onDrop, onMove: onMove, store: NewEventStore()}
}

// Push queues a message; it reports how many messages were dropped to make room.
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
	o.signalLocked()
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
	o.signalLocked() // wakes the superseded stream so it can end
	return o.gen
}

// Detach records that one of its streams has ended.
func (o *Outbox) Detach() {
	o.mu.Lock()
	o.streams--
	o.mu.Unlock()
}

// Current is the generation of the newest stream; HasStream reports whether one is open.
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

// TakenEvent is a message taken for the session's stream, with the event id it was logged
// under.
type TakenEvent struct {
	ID   string
	Data []byte
}

// TakeLogged removes and returns the queued messages if gen is still the current stream, and
// the channel that will be closed at the next news; ok is false for a superseded stream. Each
// message taken is logged for resumption (stream 0) before the outbox's lock is let go, and
// comes with its event id: a stream that attaches after it (a GET with Last-Event-ID) then
// finds in the log every message the stream before it took, whether that stream wrote it or
// died first.
func (o *Outbox) TakeLogged(gen uint64) (evs []TakenEvent, wake <-chan struct{}, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if gen != o.gen {
		return nil, nil, false
	}
	if len(o.queue) > 0 {
		evs = make([]TakenEvent, 0, len(o.queue))
		for _, msg := range o.queue {
			evs = append(evs, TakenEvent{ID: o.store.ID(0, o.store.Append(0, msg, false)), Data: msg})
		}
		clear(o.queue) // the array is kept for the next messages, not what they were
		o.queue, o.bytes = o.queue[:0], 0
	}
	return evs, o.wake, true
}

// Store is what the session's streams wrote, for replay on Last-Event-ID.
func (o *Outbox) Store() *EventStore { return o.store }

// Close wakes every stream for the last time.
func (o *Outbox) Close() {
	o.mu.Lock()
	o.gen++
	o.signalLocked()
	o.mu.Unlock()
}

func (o *Outbox) signalLocked() {
	close(o.wake)
	o.wake = make(chan struct{})
}

// LossLogInterval is how often a session may log that it lost or moved messages: a client
// that stops reading would otherwise cost a log line per message. Every message is still
// counted by the metrics at once (onDrop, onMove).
const LossLogInterval = 10 * time.Second

// Moved records a message that was for a request's stream and went to the outbox instead,
// since that stream was full.
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

// noteLosses tells log about the messages lost since its last line, once LossLogInterval
// has passed since that line.
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
