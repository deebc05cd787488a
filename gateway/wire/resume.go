package wire

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Resumable streams (2025-11-25): an event's id is <tag>_<stream>_<seq>, the tag random per
// session (another's id is foreign), stream 0 the GET stream, seq from 1 (0: priming). Replay
// is bounded per stream, per session (the newest event stays) and in time.
const (
	resumeEvents    = 128
	resumeBytes     = 4 << 20
	resumeStreams   = 32
	ResumeRetention = 60 * time.Second
	SSERetry        = time.Second // announced in every priming event
	MaxEventIDLen   = 64          // a longer Last-Event-ID is not parsed
)

// Each is answered 400.
var (
	errEventIDMalformed = errors.New("Last-Event-ID is not an event id of this gateway")
	errEventIDForeign   = errors.New("Last-Event-ID belongs to another session")
	errEventIDUnknown   = errors.New("Last-Event-ID names a stream this session does not have (or no longer has)")
	errEventIDExpired   = errors.New("the events after Last-Event-ID are no longer kept")
)

type LoggedEvent struct {
	Seq  uint64
	at   time.Time
	Data []byte
}

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
	wake    news // the stream's news, for Since
}

// EventStore holds what a session's streams wrote, for replay; safe for concurrent use.
type EventStore struct {
	mu      sync.Mutex
	tag     string
	streams map[uint64]*streamLog
	order   []uint64 // stream ids, oldest first
	next    uint64
	bytes   int
	// zeroSeq is the GET stream's last seq when its log was dropped: a new one goes on from it.
	zeroSeq uint64
	sweepAt time.Time // earliest the time bound may drop something; zero: nothing
}

func NewEventStore() *EventStore {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails: it crashes the program instead
	return &EventStore{tag: hex.EncodeToString(b[:]), streams: map[uint64]*streamLog{}}
}

func (rs *EventStore) ID(sid, seq uint64) string {
	return string(rs.AppendID(make([]byte, 0, MaxEventIDLen), sid, seq))
}

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
	now := time.Now()
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
		if i := slices.IndexFunc(rs.order, func(x uint64) bool { return rs.streams[x].done }); i >= 0 {
			victim = rs.order[i]
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

// Position is the seq of the GET stream's last event, making no log.
func (rs *EventStore) Position() uint64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if l := rs.streams[0]; l != nil {
		return l.lastSeq
	}
	return rs.zeroSeq
}

// Append keeps an event of stream sid and returns its seq; last ends a resumed POST stream.
func (rs *EventStore) Append(sid uint64, data []byte, last bool) uint64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	l := rs.logLocked(sid)
	if l == nil {
		// A POST stream pushed out: its events get the priming id, which Resolve refuses. A
		// new log would number from 1 again, and a given id would name another event.
		return 0
	}
	now := time.Now()
	l.lastSeq++
	l.events = append(l.events, LoggedEvent{Seq: l.lastSeq, at: now, Data: data})
	l.last = now
	l.done = l.done || last
	rs.bytes += len(data)
	if len(l.events) > resumeEvents {
		rs.evictLocked(l)
	}
	rs.dueLocked(now.Add(ResumeRetention))
	rs.sweepLocked(now)
	rs.trimLocked(l)
	l.wake.signal()
	return l.lastSeq
}

// Finish marks stream sid as ended without a last event of its own (a cancelled call).
func (rs *EventStore) Finish(sid uint64) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if l := rs.streams[sid]; l != nil {
		l.done, l.last = true, time.Now()
		rs.dueLocked(l.last.Add(ResumeRetention))
		l.wake.signal()
	}
}

// news is closed at its holder's next news, and made only when a reader waits for it (wait);
// the holder's lock guards it.
type news chan struct{}

func (n *news) signal() {
	if *n != nil {
		close(*n)
		*n = nil
	}
}

func (n *news) wait() <-chan struct{} {
	if *n == nil {
		*n = make(news)
	}
	return *n
}

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

// sweepLocked applies the time bound once due, and works out when it is next due.
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

// trimLocked applies the byte bound, oldest streams first, sparing keep's newest event.
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
	l.wake.signal() // a reader of a dropped stream ends
	delete(rs.streams, sid)
	if i := slices.Index(rs.order, sid); i >= 0 {
		rs.order = slices.Delete(rs.order, i, i+1)
	}
}

// Resolve checks a Last-Event-ID: the stream it names and the seq after which to replay.
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
	rs.sweepLocked(time.Now())
	l := rs.logLocked(sid)
	if l == nil || after > l.lastSeq {
		return 0, 0, errEventIDUnknown
	}
	if after < l.evicted {
		return 0, 0, errEventIDExpired
	}
	return sid, after, nil
}

// Since returns stream sid's events after seq; ok is false when they are gone.
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
	return evs, l.done, l.wake.wait(), true
}

// Attach registers a reader of POST stream sid; the newest wins (Current). Detach ends it.
func (rs *EventStore) Attach(sid uint64) uint64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	l := rs.streams[sid]
	if l == nil {
		return 0
	}
	l.reader++
	l.readers++
	l.wake.signal()
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
			l.alone = time.Now()
			if l.done { // its retention may have passed while it was read
				rs.dueLocked(l.last.Add(ResumeRetention))
			}
		}
	}
}

// Abandoned: POST stream sid had no reader for ResumeRetention since lost.
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
	return time.Since(l.alone) > ResumeRetention && time.Since(lost) > ResumeRetention
}
