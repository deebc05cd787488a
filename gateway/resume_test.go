package gateway

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newTestStore() (*resumeStore, *fakeClock) {
	c := &fakeClock{t: time.Unix(1_000_000, 0)}
	rs := newResumeStore()
	rs.now = c.now
	return rs, c
}

// TestResumeReplay: a resume from any id of a stream gets exactly the events after it, and
// the stream is done once its answer is in.
func TestResumeReplay(t *testing.T) {
	rs, _ := newTestStore()
	sid := rs.open()
	prime := rs.eventID(sid, 0)
	var ids []string
	for _, m := range []string{"p1", "p2", "answer"} {
		ids = append(ids, rs.record(sid, []byte(m), m == "answer"))
	}
	for i, from := range append([]string{prime}, ids...) {
		gotSID, after, err := rs.resolve(from)
		if err != nil || gotSID != sid {
			t.Fatalf("resolve(%q) = %d, %v", from, gotSID, err)
		}
		evs, done, _, ok := rs.since(gotSID, after)
		if !ok || !done || len(evs) != 3-i {
			t.Fatalf("since after %q: %d events, done %v, ok %v; want %d, done", from, len(evs), done, ok, 3-i)
		}
	}
	if a, b := rs.eventID(sid, 1), rs.eventID(rs.open(), 1); a == b {
		t.Fatalf("two streams' first events share the id %q", a)
	}
}

// TestResumeRefused: ids that are malformed, another session's, of an unknown stream, past
// the stream's end, or older than what is kept are refused with their own errors.
func TestResumeRefused(t *testing.T) {
	rs, clock := newTestStore()
	other, _ := newTestStore()
	sid := rs.open()
	first := rs.record(sid, []byte("one"), false)
	for i := 0; i < resumeEvents; i++ {
		rs.record(sid, []byte("more"), false)
	}
	timed := rs.open()
	timedID := rs.record(timed, []byte("old"), false)
	clock.add(resumeRetention + time.Second)
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
		{"another session", other.eventID(1, 0), errEventIDForeign},
		{"unknown stream", rs.eventID(99, 0), errEventIDUnknown},
		{"past the end", rs.eventID(sid, resumeEvents+5), errEventIDUnknown},
		{"evicted by count", first, errEventIDExpired},
		{"evicted by time", rs.eventID(timed, 0), errEventIDExpired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := rs.resolve(tc.id); !errors.Is(err, tc.want) {
				t.Fatalf("resolve(%q) = %v, want %v", tc.id, err, tc.want)
			}
		})
	}
	if _, _, err := rs.resolve(timedID); err != nil {
		t.Fatalf("the newest event's id is refused: %v", err)
	}
}

// TestResumeBounds: the bytes kept and the streams kept stay within their bounds; a stream
// ended longer than resumeRetention ago is gone.
func TestResumeBounds(t *testing.T) {
	rs, clock := newTestStore()
	big := bytes.Repeat([]byte("x"), 1<<20)
	for i := 0; i < 3*resumeStreams; i++ {
		sid := rs.open()
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
	sid := rs.open()
	rs.record(sid, []byte("answer"), true)
	clock.add(resumeRetention + time.Second)
	rs.open() // any use sweeps
	if _, _, err := rs.resolve(rs.eventID(sid, 0)); !errors.Is(err, errEventIDUnknown) {
		t.Fatalf("a stream ended past the retention is still resumable: %v", err)
	}
}

// TestResumeAbandoned: a lost stream with no reader is abandoned after the retention, not
// before, and never while a reader follows it.
func TestResumeAbandoned(t *testing.T) {
	rs, clock := newTestStore()
	sid := rs.open()
	lost := clock.now()
	clock.add(resumeRetention / 2)
	if rs.abandoned(sid, lost) {
		t.Fatal("abandoned before the retention")
	}
	rs.attach(sid)
	clock.add(2 * resumeRetention)
	if rs.abandoned(sid, lost) {
		t.Fatal("abandoned while a reader follows it")
	}
	rs.detach(sid)
	clock.add(resumeRetention / 2)
	if rs.abandoned(sid, lost) {
		t.Fatal("abandoned right after its reader left")
	}
	clock.add(resumeRetention)
	if !rs.abandoned(sid, lost) {
		t.Fatal("not abandoned a retention after its reader left")
	}
}

// TestSSEPrime: the priming event carries the id and the retry field, and no data a client
// would dispatch as a message.
func TestSSEPrime(t *testing.T) {
	rec := httptest.NewRecorder()
	st := (&Gateway{}).newSSE(rec)
	if err := st.start(); err != nil {
		t.Fatal(err)
	}
	if err := st.prime("abc_1_0", 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := st.eventID("abc_1_1", []byte(`{"x":1}`)); err != nil {
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
	rs, _ := newTestStore()
	var old []string
	for _, m := range []string{"a1", "a2", "a3"} {
		old = append(old, rs.record(0, []byte(m), false))
	}
	post := rs.open()
	postID := rs.record(post, []byte("p1"), false)
	for range resumeStreams {
		rs.open() // the GET stream's log and the POST stream's go, the oldest first
	}
	if got := rs.position(0); got != 3 {
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
	sid, after, err := rs.resolve(old[2])
	if err != nil {
		t.Fatalf("resume from a3: %v", err)
	}
	evs, _, _, ok := rs.since(sid, after)
	if !ok || len(evs) != 4 || string(evs[0].data) != "b1" {
		t.Fatalf("resume from a3 replays %d events (ok %v), want b1 to b4", len(evs), ok)
	}
	// From a2: a3 went with the log.
	if _, _, err := rs.resolve(old[1]); !errors.Is(err, errEventIDExpired) {
		t.Fatalf("resume from a2 after a3 went: %v, want %v", err, errEventIDExpired)
	}
	// The POST stream's events after it went cannot be resumed from, nor can its old ones.
	late := rs.record(post, []byte("p2"), false)
	for _, id := range []string{postID, late} {
		if _, _, err := rs.resolve(id); !errors.Is(err, errEventIDUnknown) {
			t.Fatalf("resume of the pushed-out POST stream from %q: %v, want %v", id, err, errEventIDUnknown)
		}
	}
	if late == postID {
		t.Fatalf("the pushed-out POST stream's event got the id %q of the event before", late)
	}
}
