package wire

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// record is Append, returning the event's id rather than its seq.
func (rs *EventStore) record(sid uint64, data []byte, last bool) string {
	return rs.ID(sid, rs.Append(sid, data, last))
}

// TestResumeReplay: a resume from any id of a stream gets exactly the events after it, and
// the stream is done once its answer is in.
func TestResumeReplay(t *testing.T) {
	rs := NewEventStore()
	sid := rs.Open()
	prime := rs.ID(sid, 0)
	var ids []string
	for _, m := range []string{"p1", "p2", "answer"} {
		ids = append(ids, rs.record(sid, []byte(m), m == "answer"))
	}
	for i, from := range append([]string{prime}, ids...) {
		gotSID, after, err := rs.Resolve(from)
		if err != nil || gotSID != sid {
			t.Fatalf("resolve(%q) = %d, %v", from, gotSID, err)
		}
		evs, done, _, ok := rs.Since(gotSID, after)
		if !ok || !done || len(evs) != 3-i {
			t.Fatalf("since after %q: %d events, done %v, ok %v; want %d, done", from, len(evs), done, ok, 3-i)
		}
	}
	if a, b := rs.ID(sid, 1), rs.ID(rs.Open(), 1); a == b {
		t.Fatalf("two streams' first events share the id %q", a)
	}
}

// TestResumeRefused: ids that are malformed, another session's, of an unknown stream, past
// the stream's end, or older than what is kept are refused with their own errors.
func TestResumeRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rs := NewEventStore()
		other := NewEventStore()
		sid := rs.Open()
		first := rs.record(sid, []byte("one"), false)
		for i := 0; i < resumeEvents; i++ {
			rs.record(sid, []byte("more"), false)
		}
		timed := rs.Open()
		timedID := rs.record(timed, []byte("old"), false)
		time.Sleep(ResumeRetention + time.Second)
		rs.record(timed, []byte("new"), false)

		tests := []struct {
			name, id string
			want     error
		}{
			{"empty parts", "__", errEventIDMalformed},
			{"not ours", "42", errEventIDMalformed},
			{"line break", rs.tag + "_1_1\n", errEventIDMalformed},
			{"negative", rs.tag + "_1_-1", errEventIDMalformed},
			{"too long", rs.tag + "_1_" + strings.Repeat("1", 80), errEventIDMalformed},
			{"not hex tag", strings.Repeat("z", len(rs.tag)) + "_1_1", errEventIDMalformed},
			{"another session", other.ID(1, 0), errEventIDForeign},
			{"unknown stream", rs.ID(99, 0), errEventIDUnknown},
			{"past the end", rs.ID(sid, resumeEvents+5), errEventIDUnknown},
			{"evicted by count", first, errEventIDExpired},
			{"evicted by time", rs.ID(timed, 0), errEventIDExpired},
		}
		for _, tc := range tests {
			if _, _, err := rs.Resolve(tc.id); !errors.Is(err, tc.want) {
				t.Errorf("%s: resolve(%q) = %v, want %v", tc.name, tc.id, err, tc.want)
			}
		}
		if _, _, err := rs.Resolve(timedID); err != nil {
			t.Fatalf("the newest event's id is refused: %v", err)
		}
	})
}

// TestResumeBounds: the bytes kept and the streams kept stay within their bounds; a stream
// ended longer than ResumeRetention ago is gone.
func TestResumeBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rs := NewEventStore()
		big := bytes.Repeat([]byte("x"), 1<<20)
		for i := 0; i < 3*resumeStreams; i++ {
			sid := rs.Open()
			for j := 0; j < 3; j++ {
				rs.record(sid, big, j == 2)
			}
		}
		rs.mu.Lock()
		n, b := len(rs.streams), rs.bytes
		rs.mu.Unlock()
		if n > resumeStreams || b > resumeBytes {
			t.Fatalf("kept %d streams and %d bytes; bounds %d and %d", n, b, resumeStreams, resumeBytes)
		}
		sid := rs.Open()
		rs.record(sid, []byte("answer"), true)
		time.Sleep(ResumeRetention + time.Second)
		rs.Open() // any use sweeps
		if _, _, err := rs.Resolve(rs.ID(sid, 0)); !errors.Is(err, errEventIDUnknown) {
			t.Fatalf("a stream ended past the retention is still resumable: %v", err)
		}
	})
}

// TestResumeAbandoned: a lost stream with no reader is abandoned after the retention, not
// before, and never while a reader follows it.
func TestResumeAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rs := NewEventStore()
		sid := rs.Open()
		lost := time.Now()
		time.Sleep(ResumeRetention / 2)
		if rs.Abandoned(sid, lost) {
			t.Fatal("abandoned before the retention")
		}
		rs.Attach(sid)
		time.Sleep(2 * ResumeRetention)
		if rs.Abandoned(sid, lost) {
			t.Fatal("abandoned while a reader follows it")
		}
		rs.Detach(sid)
		time.Sleep(ResumeRetention / 2)
		if rs.Abandoned(sid, lost) {
			t.Fatal("abandoned right after its reader left")
		}
		time.Sleep(ResumeRetention)
		if !rs.Abandoned(sid, lost) {
			t.Fatal("not abandoned a retention after its reader left")
		}
	})
}

// TestResumeAbandonedCountsFromTheLoss: a stream whose last reader left long ago is abandoned
// a retention after its connection was lost, not a nanosecond sooner.
func TestResumeAbandonedCountsFromTheLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rs := NewEventStore()
		sid := rs.Open()
		rs.Attach(sid)
		rs.Detach(sid) // no reader since now
		time.Sleep(2 * ResumeRetention)
		lost := time.Now()
		time.Sleep(ResumeRetention)
		if rs.Abandoned(sid, lost) {
			t.Fatal("abandoned exactly a retention after the loss")
		}
		time.Sleep(time.Nanosecond)
		if !rs.Abandoned(sid, lost) {
			t.Fatal("not abandoned past a retention after the loss")
		}
	})
}

// TestSSEPrime: the priming event carries the id and the retry field, and no data a client
// would dispatch as a message.
func TestSSEPrime(t *testing.T) {
	rec := httptest.NewRecorder()
	st := NewSSE(rec, WriteTimeout)
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	if err := st.Prime("abc_1_0", 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := st.EventID("abc_1_1", []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	want := "id: abc_1_0\nretry: 1500\ndata: \n\nid: abc_1_1\nevent: message\ndata: {\"x\":1}\n\n"
	if got := rec.Body.String(); got != want {
		t.Fatalf("stream = %q, want %q", got, want)
	}
}

// TestResumeIDsNeverNameAnotherEvent: an event id, once given, never names another event, even
// after the session's other streams pushed its stream's log out. The GET stream's log, made
// again, goes on numbering from where it was, and refuses a resumption from before the events
// it lost; a POST stream pushed out logs nothing more, and a resumption of it is refused.
func TestResumeIDsNeverNameAnotherEvent(t *testing.T) {
	rs := NewEventStore()
	var old []string
	for _, m := range []string{"a1", "a2", "a3"} {
		old = append(old, rs.record(0, []byte(m), false))
	}
	post := rs.Open()
	postID := rs.record(post, []byte("p1"), false)
	for range resumeStreams {
		rs.Open() // the GET stream's log and the POST stream's go, the oldest first
	}
	if got := rs.Position(); got != 3 {
		t.Fatalf("a new GET stream after the log went is primed at %d, want 3", got)
	}
	var fresh []string
	for _, m := range []string{"b1", "b2", "b3", "b4"} {
		fresh = append(fresh, rs.record(0, []byte(m), false))
	}
	for _, id := range fresh {
		if slices.Contains(old, id) {
			t.Fatalf("event id %q was given twice", id)
		}
	}
	// From a3, the last event before the log went: nothing was lost, all of b follows.
	sid, after, err := rs.Resolve(old[2])
	if err != nil {
		t.Fatalf("resume from a3: %v", err)
	}
	evs, _, _, ok := rs.Since(sid, after)
	if !ok || len(evs) != 4 || string(evs[0].Data) != "b1" {
		t.Fatalf("resume from a3 replays %d events (ok %v), want b1 to b4", len(evs), ok)
	}
	// From a2: a3 went with the log.
	if _, _, err := rs.Resolve(old[1]); !errors.Is(err, errEventIDExpired) {
		t.Fatalf("resume from a2 after a3 went: %v, want %v", err, errEventIDExpired)
	}
	// The POST stream's events after it went cannot be resumed from, nor can its old ones.
	late := rs.record(post, []byte("p2"), false)
	for _, id := range []string{postID, late} {
		if _, _, err := rs.Resolve(id); !errors.Is(err, errEventIDUnknown) {
			t.Fatalf("resume of the pushed-out POST stream from %q: %v, want %v", id, err, errEventIDUnknown)
		}
	}
	if late == postID {
		t.Fatalf("the pushed-out POST stream's event got the id %q of the event before", late)
	}
}

// Readers of a resumable stream wait on the channel since hands them while events are
// recorded from another goroutine: each wait ends, and the events come out in order, none
// lost between the read and the wait. (The writer stays within the log's bound of events,
// resumeEvents, ahead of the reader: past it, a gap is the design.)
func TestReviewResumeWakeLosesNothing(t *testing.T) {
	rs := NewEventStore()
	sid := rs.Open()
	const n = 5000
	var read atomic.Int64
	go func() {
		for i := range n {
			for int64(i)-read.Load() >= resumeEvents/2 {
				runtime.Gosched() // the reader is behind: let it catch up
			}
			rs.record(sid, []byte(strconv.Itoa(i)), i == n-1)
		}
	}()
	var after uint64
	got := 0
	deadline := time.After(30 * time.Second)
	for {
		evs, done, wake, ok := rs.Since(sid, after)
		if !ok {
			t.Fatalf("the stream is gone after %d events", got)
		}
		for _, e := range evs {
			if string(e.Data) != strconv.Itoa(got) {
				t.Fatalf("event %q, want %d", e.Data, got)
			}
			got++
			read.Store(int64(got))
			after = e.Seq
		}
		if done { // the last event is in, and was read with the rest
			break
		}
		select {
		case <-wake:
		case <-deadline:
			t.Fatalf("reader asleep after %d of %d events", got, n)
		}
	}
	if got != n {
		t.Fatalf("read %d events, want %d", got, n)
	}
}

// TestResumeIDLengthBound: a Last-Event-ID of up to 64 bytes is read (numbers may carry
// leading zeros), a longer one is refused as malformed without being parsed.
func TestResumeIDLengthBound(t *testing.T) {
	rs := NewEventStore()
	sid := rs.Open()
	rs.record(sid, []byte("e"), false)
	id := func(n int) string { // the id of (sid, 1), n bytes long
		s := rs.ID(sid, 1)
		tag, rest, _ := strings.Cut(s, "_")
		return tag + "_" + strings.Repeat("0", n-len(s)) + rest
	}
	if got, after, err := rs.Resolve(id(MaxEventIDLen)); err != nil || got != sid || after != 1 {
		t.Errorf("a 64-byte id: stream %d after %d, %v; want stream %d after 1", got, after, err, sid)
	}
	if _, _, err := rs.Resolve(id(MaxEventIDLen + 1)); !errors.Is(err, errEventIDMalformed) {
		t.Errorf("a 65-byte id: %v, want malformed", err)
	}
}

// TestResumeAbandonedCountsFromTheLastReader: a stream is abandoned a retention after its last
// reader left, not a nanosecond sooner, whenever its connection was lost.
func TestResumeAbandonedCountsFromTheLastReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rs := NewEventStore()
		sid := rs.Open()
		lost := time.Now()
		rs.Attach(sid)
		time.Sleep(2 * ResumeRetention)
		rs.Detach(sid)
		time.Sleep(ResumeRetention)
		if rs.Abandoned(sid, lost) {
			t.Fatal("abandoned exactly a retention after its reader left")
		}
		time.Sleep(time.Nanosecond)
		if !rs.Abandoned(sid, lost) {
			t.Fatal("not abandoned a retention and a nanosecond after its reader left")
		}
	})
}

// TestResumeNewestReaderIsCurrent: of a POST stream's readers the newest is current, an
// earlier one no longer is, and a stream that is gone has none.
func TestResumeNewestReaderIsCurrent(t *testing.T) {
	rs := NewEventStore()
	sid := rs.Open()
	first := rs.Attach(sid)
	if !rs.Current(sid, first) {
		t.Error("the only reader is not current")
	}
	second := rs.Attach(sid)
	if rs.Current(sid, first) || !rs.Current(sid, second) {
		t.Errorf("after a second reader: first current %v, second %v; want only the second", rs.Current(sid, first), rs.Current(sid, second))
	}
	if rs.Current(sid+1, 0) || rs.Attach(sid+1) != 0 {
		t.Error("a stream that does not exist has a current reader")
	}
}
