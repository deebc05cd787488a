package wire

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestResumeSweepOnTime: the time bound holds to the nanosecond however rarely the store
// sweeps: an event is kept for exactly ResumeRetention and gone after it, a finished stream
// goes a retention after its last event, and one with a reader stays until the reader left.
func TestResumeSweepOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rs := NewEventStore()
		old := rs.Open()
		oldID := rs.record(old, []byte("progress"), false)
		time.Sleep(ResumeRetention / 2)
		done := rs.Open()
		rs.record(done, []byte("answer"), true)
		followed := rs.Open()
		rs.record(followed, []byte("answer"), true)
		rs.Attach(followed)

		time.Sleep(ResumeRetention / 2) // old's event is exactly ResumeRetention old
		rs.Open()
		if _, _, err := rs.Resolve(oldID); err != nil {
			t.Fatalf("an event exactly ResumeRetention old is refused: %v", err)
		}
		time.Sleep(time.Nanosecond)
		rs.Open()
		if _, _, err := rs.Resolve(rs.ID(old, 0)); !errors.Is(err, errEventIDExpired) {
			t.Fatalf("an event past ResumeRetention is still replayed: %v", err)
		}

		time.Sleep(ResumeRetention/2 - time.Nanosecond) // done and followed ended exactly ResumeRetention ago
		rs.Open()
		if _, _, err := rs.Resolve(rs.ID(done, 0)); err != nil {
			t.Fatalf("a stream ended exactly ResumeRetention ago is gone: %v", err)
		}
		time.Sleep(time.Nanosecond)
		rs.Open()
		if _, _, err := rs.Resolve(rs.ID(done, 1)); !errors.Is(err, errEventIDUnknown) {
			t.Fatalf("a stream ended past ResumeRetention is still resumable: %v", err)
		}
		rs.mu.Lock()
		_, kept := rs.streams[followed]
		rs.mu.Unlock()
		if !kept {
			t.Fatal("a finished stream was dropped while a reader follows it")
		}
		rs.Detach(followed) // its retention has passed long ago: the next use drops it
		rs.Open()
		rs.mu.Lock()
		_, kept = rs.streams[followed]
		rs.mu.Unlock()
		if kept {
			t.Fatal("a finished stream past its retention stays after its reader left")
		}
	})
}

// TestResumeWakesReaders: a reader waiting on a stream is woken by its next event, by its
// end, and by its eviction.
func TestResumeWakesReaders(t *testing.T) {
	rs := NewEventStore()
	wait := func(sid uint64) <-chan struct{} {
		t.Helper()
		_, _, wake, ok := rs.Since(sid, 0)
		if !ok || wake == nil {
			t.Fatalf("since(%d): ok %v, wake %v", sid, ok, wake)
		}
		return wake
	}
	woken := func(what string, wake <-chan struct{}) {
		t.Helper()
		select {
		case <-wake:
		default:
			t.Fatalf("a reader is not woken by %s", what)
		}
	}
	sid := rs.Open()
	w := wait(sid)
	rs.record(sid, []byte("p"), false)
	woken("an event", w)
	w = wait(sid)
	select {
	case <-w:
		t.Fatal("a fresh wait is already woken")
	default:
	}
	rs.Finish(sid)
	woken("the stream's end", w)

	victim := rs.Open()
	w = wait(victim)
	for range resumeStreams + 1 { // unfinished streams: the oldest goes
		rs.Open()
	}
	woken("the stream's eviction", w)
}

// TestResumeLogAllocs: logging a POST's answer stream (open, its one event, its ids) costs a
// few allocations, not a copy of the stream list and a channel per event.
func TestResumeLogAllocs(t *testing.T) {
	rs := NewEventStore()
	for range resumeStreams { // a busy session: every stream slot is taken
		rs.record(rs.Open(), []byte("answer"), true)
	}
	ev := []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	allocs := testing.AllocsPerRun(200, func() {
		sid := rs.Open()
		rs.record(sid, ev, true)
	})
	// The stream's log itself, its map entry's share, the event id.
	t.Logf("%.1f allocations", allocs)
	if allocs > 3 {
		t.Fatalf("%.1f allocations per logged answer stream, want at most 3", allocs)
	}
}
