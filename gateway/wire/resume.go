package wire

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Resumable streams (2025-11-25, "Resumability and Redelivery"): every event gemgate writes
// on a legacy session's SSE stream carries an id <tag>_<stream>_<seq>. The tag is random per
// session, so an id from another session (or another user's) is recognised as foreign rather
// than read as a position in this one; stream 0 is the session's GET stream and 1, 2, … its
// POST answer streams; seq counts the stream's events from 1, and seq 0 is the priming
// Position. A GET with Last-Event-ID replays what followed that id on the stream it names.
//
// What a session keeps for replay is bounded three ways: resumeEvents events per stream,
// resumeBytes bytes over all its streams (the oldest events go first, the newest event of a
// session stays even alone over the limit), and ResumeRetention in time: an event older than
// that is gone, and so is a finished stream that long after its last event.
const (
	resumeEvents    = 128
	resumeBytes     = 4 << 20
	resumeStreams   = 32
	ResumeRetention = 60 * time.Second
	// SSERetry is the reconnection delay every stream announces in its priming event.
	SSERetry = time.Second
	// MaxEventIDLen bounds what a Last-Event-ID header may be before it is even parsed.
	MaxEventIDLen = 64
)

// Errors of a Last-Event-ID that cannot be resumed; each is answered 400.
var (
	errEventIDMalformed = errors.New("Last-Event-ID is not an event id of this gateway")
	errEventIDForeign   = errors.New("Last-Event-ID belongs to another session")
	errEventIDUnknown   = errors.New("Last-Event-ID names a stream this session does not have (or no longer has)")
	errEventIDExpired   = errors.New("the events after Last-Event-ID are no longer kept")
)

// LoggedEvent is an event kept for replay: its seq in its stream, and its message.
type LoggedEvent struct {
	Seq  uint64
	at   time.Time
	Data []byte
}

// streamLog is what one stream wrote, for replay.
type streamLog struct {
	events  []LoggedEvent  // oldest first
	first   [1]LoggedEvent // events' first backing array: most POST streams log one event
	lastSeq uint64
	evicted uint64 // highest seq dropped from events; a resume from before it has a gap
	done    bool   // the stream's last event (a POST's answer) is in
	last    time.Time
	reader  uint64 // generation of the newest reader of a POST stream; 0 for none ever
	readers int    // readers attached now
	alone   time.Time
	// wake is closed at the stream's next news. It is made only when a reader asks for it
	// (since): most streams are never read back, and a channel per event would be waste.
	wake chan struct{}
}

// EventStore holds what a session's streams wrote, for replay on Last-Event-ID: a log per
// stream, bounded as above. Its methods are safe for concurrent use.
type EventStore struct {
	mu      sync.Mutex
	tag     string
	now     func() time.Time
	streams map[uint64]*streamLog
	order   []uint64 // stream ids, oldest first
	next    uint64
	bytes   int
	// zeroSeq is the GET stream's (0) last seq when its log was last dropped (a session's
	// other streams may push it out): a log made for it again goes on from there, so that no
	// id it gave names another event, and a resumption from before it is refused.
	zeroSeq uint64
	// sweepAt is the earliest moment the time bound may drop something (zero: nothing to
	// drop); a sweep before it would find nothing, so every use of the store need not walk
	// its streams.
	sweepAt time.Time
}

// NewEventStore is a session's store, with a tag of its own for its event ids.
func NewEventStore() *EventStore {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("gateway: no randomness for a stream tag: " + err.Error())
	}
	return &EventStore{tag: hex.EncodeToString(b[:]), now: time.Now, streams: map[uint64]*streamLog{}}
}

// ID is the id of event seq of stream sid.
func (rs *EventStore) ID(sid, seq uint64) string {
	return string(rs.AppendID(make([]byte, 0, MaxEventIDLen), sid, seq))
}

// AppendID appends ID(sid, seq) to buf.
func (rs *EventStore) AppendID(buf []byte, sid, seq uint64) []byte {
	buf = append(append(buf, rs.tag...), '_')
	buf = append(strconv.AppendUint(buf, sid, 10), '_')
	return strconv.AppendUint(buf, seq, 10)
}

// Open starts the log of a new POST answer stream.
func (rs *EventStore) Open() uint64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.next++
	rs.addLocked(rs.next)
	return rs.next
}

func (rs *EventStore) addLocked(sid uint64) *streamLog {
	now := rs.now()
	l := &streamLog{last: now, alone: now}
	if sid == 0 {
		l.lastSeq, l.evicted = rs.zeroSeq, rs.zeroSeq
	}
	l.events = l.first[:0]
	rs.streams[sid] = l
	rs.order = append(rs.order, sid)
	rs.sweepLocked(now)
	for len(rs.order) > resumeStreams {
		victim := rs.order[0] // the oldest; the oldest finished one if there is any
		for _, x := range rs.order {
			if rs.streams[x].done {
				victim = x
				break
			}
		}
		rs.dropLocked(victim)
	}
	return l
}

// logLocked is stream sid's log, made on first use for the GET stream (0).
func (rs *EventStore) logLocked(sid uint64) *streamLog {
	l := rs.streams[sid]
	if l == nil && sid == 0 {
		l = rs.addLocked(0)
	}
	return l
}

// Position is the seq of the last event of stream sid: the priming id of a new GET stream.
// It makes no log: a GET stream's is made with its first event (Append) or the first
// resumption from it (resolve), and an idle session need not hold an empty one.
func (rs *EventStore) Position(sid uint64) uint64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if l := rs.streams[sid]; l != nil {
		return l.lastSeq
	}
	if sid == 0 {
		return rs.zeroSeq
	}
	return 0
}

// Append keeps an event of stream sid and returns its seq. last marks the stream's final
// event: a resumed POST stream ends after it.
func (rs *EventStore) Append(sid uint64, data []byte, last bool) uint64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	l := rs.logLocked(sid)
	if l == nil {
		// A POST stream pushed out meanwhile: its events are no longer logged, and get the
		// stream's priming id, from which resolve refuses a resumption (the stream is
		// unknown). A log made again would number its events from 1 again, and an id the
		// client had been given would name another event.
		return 0
	}
	now := rs.now()
	l.lastSeq++
	l.events = append(l.events, LoggedEvent{Seq: l.lastSeq, at: now, Data: data})
	l.last = now
	l.done = l.done || last
	rs.bytes += len(data)
	if len(l.events) > resumeEvents {
		rs.evictLocked(l)
	}
	rs.dueLocked(now.Add(ResumeRetention)) // this event's, and a finished stream's, end
	rs.sweepLocked(now)
	rs.trimLocked(l)
	l.signal()
	return l.lastSeq
}

// Finish marks stream sid as ended without a last event of its own (a cancelled call).
func (rs *EventStore) Finish(sid uint64) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if l := rs.streams[sid]; l != nil {
		l.done, l.last = true, rs.now()
		rs.dueLocked(l.last.Add(ResumeRetention))
		l.signal()
	}
}

// signal wakes the stream's readers, if any wait.
func (l *streamLog) signal() {
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
}

// wakeLocked is the channel closed at the stream's next news.
func (l *streamLog) wakeLocked() chan struct{} {
	if l.wake == nil {
		l.wake = make(chan struct{})
	}
	return l.wake
}

// dueLocked notes that the time bound may drop something at t.
func (rs *EventStore) dueLocked(t time.Time) {
	if rs.sweepAt.IsZero() || t.Before(rs.sweepAt) {
		rs.sweepAt = t
	}
}

func (rs *EventStore) evictLocked(l *streamLog) {
	rs.bytes -= len(l.events[0].Data)
	l.evicted = l.events[0].Seq
	l.events[0] = LoggedEvent{}
	l.events = l.events[1:]
}

// sweepLocked applies the time bound once it is due, and works out when it is next due.
func (rs *EventStore) sweepLocked(now time.Time) {
	if rs.sweepAt.IsZero() || !now.After(rs.sweepAt) {
		return
	}
	rs.sweepAt = time.Time{}
	for i := 0; i < len(rs.order); {
		sid := rs.order[i]
		l := rs.streams[sid]
		for len(l.events) > 0 && now.Sub(l.events[0].at) > ResumeRetention {
			rs.evictLocked(l)
		}
		if l.done && l.readers == 0 && now.Sub(l.last) > ResumeRetention {
			rs.dropLocked(sid) // takes it out of rs.order: order[i] is the next one now
			continue
		}
		if len(l.events) > 0 {
			rs.dueLocked(l.events[0].at.Add(ResumeRetention))
		}
		if l.done && l.readers == 0 {
			rs.dueLocked(l.last.Add(ResumeRetention))
		}
		i++
	}
}

// trimLocked applies the byte bound, oldest streams first; the event just written to keep
// stays even alone over the bound.
func (rs *EventStore) trimLocked(keep *streamLog) {
	if rs.bytes <= resumeBytes {
		return
	}
	for _, sid := range rs.order {
		l := rs.streams[sid]
		for len(l.events) > 0 && rs.bytes > resumeBytes && !(l == keep && len(l.events) == 1) {
			rs.evictLocked(l)
		}
		if rs.bytes <= resumeBytes {
			return
		}
	}
}

func (rs *EventStore) dropLocked(sid uint64) {
	l := rs.streams[sid]
	if l == nil {
		return
	}
	for _, e := range l.events {
		rs.bytes -= len(e.Data)
	}
	if sid == 0 {
		rs.zeroSeq = l.lastSeq
	}
	l.done = true
	l.signal() // a reader of a dropped stream ends
	delete(rs.streams, sid)
	for i, x := range rs.order {
		if x == sid {
			rs.order = append(rs.order[:i], rs.order[i+1:]...)
			break
		}
	}
}

// Resolve checks a Last-Event-ID against this session: the stream it names and the seq
// after which to replay.
func (rs *EventStore) Resolve(id string) (sid, after uint64, err error) {
	if len(id) > MaxEventIDLen {
		return 0, 0, errEventIDMalformed
	}
	parts := strings.Split(id, "_")
	if len(parts) != 3 || len(parts[0]) != len(rs.tag) {
		return 0, 0, errEventIDMalformed
	}
	if _, err := hex.DecodeString(parts[0]); err != nil {
		return 0, 0, errEventIDMalformed
	}
	sid, err1 := strconv.ParseUint(parts[1], 10, 64)
	after, err2 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, errEventIDMalformed
	}
	if parts[0] != rs.tag {
		return 0, 0, errEventIDForeign
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.sweepLocked(rs.now())
	l := rs.logLocked(sid)
	if l == nil || after > l.lastSeq {
		return 0, 0, errEventIDUnknown
	}
	if after < l.evicted {
		return 0, 0, errEventIDExpired
	}
	return sid, after, nil
}

// Since returns stream sid's events after seq, whether the stream is done, and the channel
// closed at its next event. ok is false when the events after seq are gone.
func (rs *EventStore) Since(sid, after uint64) (evs []LoggedEvent, done bool, wake <-chan struct{}, ok bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	l := rs.streams[sid]
	if l == nil || after < l.evicted {
		return nil, true, nil, false
	}
	for _, e := range l.events {
		if e.Seq > after {
			evs = append(evs, e)
		}
	}
	return evs, l.done, l.wakeLocked(), true
}

// Attach registers a reader of POST stream sid; the newest reader wins, so Current(gen)
// turns false for an older one. detach ends it.
func (rs *EventStore) Attach(sid uint64) uint64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	l := rs.streams[sid]
	if l == nil {
		return 0
	}
	l.reader++
	l.readers++
	l.signal()
	return l.reader
}

func (rs *EventStore) Current(sid, gen uint64) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	l := rs.streams[sid]
	return l != nil && l.reader == gen
}

func (rs *EventStore) Detach(sid uint64) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if l := rs.streams[sid]; l != nil {
		l.readers--
		if l.readers == 0 {
			l.alone = rs.now()
			if l.done { // its retention may have passed while it was read
				rs.dueLocked(l.last.Add(ResumeRetention))
			}
		}
	}
}

// Abandoned reports whether POST stream sid has had no reader for ResumeRetention since
// its own connection was lost at lost: nobody is coming back for the answer.
func (rs *EventStore) Abandoned(sid uint64, lost time.Time) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	l := rs.streams[sid]
	if l == nil {
		return true
	}
	if l.readers > 0 {
		return false
	}
	since := l.alone
	if lost.After(since) {
		since = lost
	}
	return rs.now().Sub(since) > ResumeRetention
}
