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
	queue   [][]byte
	head    int // index of the oldest message in queue (a ring)
	n       int
	bytes   int // total size of the queued messages
	dropped uint64
	gen     uint64        // generation of the current stream; 0 = none ever attached
	streams int           // streams attached and not yet detached (0 or 1 once settled)
	wake    chan struct{} // closed and replaced whenever there is news for the stream
	onDrop  func()
	onMove  func()
	losses  lossLog
	store   *EventStore // what the session's streams wrote, for replay on Last-Event-ID
}

// NewOutbox makes a session's outbox; onDrop and onMove, if set, count each message dropped
// from it and each message moved to it from a full request stream.
func NewOutbox(onDrop, onMove func()) *Outbox {
	// The ring comes with the first message: most sessions never get one, and an idle
	// session should not hold 6 KiB of empty slots.
	return &Outbox{wake: make(chan struct{}), onDrop: onDrop, onMove: onMove, store: NewEventStore()}
}

// Push queues a message; it reports how many messages were dropped to make room.
func (o *Outbox) Push(msg []byte) (dropped int) {
	o.mu.Lock()
	if o.queue == nil {
		o.queue = make([][]byte, OutboxSize)
	}
	for o.n > 0 && (o.n == len(o.queue) || o.bytes+len(msg) > outboxBytes) {
		o.bytes -= len(o.queue[o.head])
		o.queue[o.head] = nil
		o.head = (o.head + 1) % len(o.queue)
		o.n--
		o.dropped++
		dropped++
	}
	o.queue[(o.head+o.n)%len(o.queue)] = msg
	o.n++
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

// Detach records that the stream of generation gen has ended.
func (o *Outbox) Detach(gen uint64) {
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
	if o.n > 0 {
		evs = make([]TakenEvent, 0, o.n)
		for i := 0; i < o.n; i++ {
			j := (o.head + i) % len(o.queue)
			evs = append(evs, TakenEvent{ID: o.store.record(0, o.queue[j], false), Data: o.queue[j]})
			o.queue[j] = nil
		}
		o.head, o.n, o.bytes = 0, 0, 0
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

// Dropped counts the messages lost to a full outbox.
func (o *Outbox) Dropped() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.dropped
}

// LossLogInterval is how often a session may log that it lost or moved messages.
const LossLogInterval = 10 * time.Second

// lossLog tells the log about messages a session dropped or moved, at most once per
// interval: a client that stops reading would otherwise cost a log line per message. Every
// message is still counted by the metrics at once.
type lossLog struct {
	mu             sync.Mutex
	last           time.Time // when the last line was written; zero for never
	dropped, moved int       // since that line
}

// Moved records a message that was for a request's stream and went to the outbox instead,
// since that stream was full.
func (o *Outbox) Moved(log *slog.Logger) {
	if o.onMove != nil {
		o.onMove()
	}
	o.losses.note(log, 0, 1, o)
}

// NoteDropped records messages Push dropped.
func (o *Outbox) NoteDropped(log *slog.Logger, n int) {
	if n > 0 {
		o.losses.note(log, n, 0, o)
	}
}

func (l *lossLog) note(log *slog.Logger, dropped, moved int, o *Outbox) {
	l.mu.Lock()
	l.dropped += dropped
	l.moved += moved
	t := time.Now()
	if !l.last.IsZero() && t.Sub(l.last) < LossLogInterval {
		l.mu.Unlock()
		return
	}
	d, m := l.dropped, l.moved
	l.last, l.dropped, l.moved = t, 0, 0
	l.mu.Unlock()
	log.Warn("client not reading: session outbox full or request stream full; messages dropped or moved",
		"dropped", d, "moved_to_session_stream", m, "dropped_total", o.Dropped(),
		"next_report_after", LossLogInterval)
}
