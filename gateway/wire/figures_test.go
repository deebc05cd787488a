package wire

// The figures README.md and docs state, read as numbers rather than through the constants'
// names: a test that follows a constant lets the documented figure change unnoticed.

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestReplayKeeps128EventsPerStream: a stream's last 128 events can be replayed; the 129th
// pushes out the first.
func TestReplayKeeps128EventsPerStream(t *testing.T) {
	rs := NewEventStore()
	sid := rs.Open()
	for range 128 {
		rs.record(sid, []byte("e"), false)
	}
	if _, _, err := rs.Resolve(rs.ID(sid, 0)); err != nil {
		t.Fatalf("with 128 events, a resume from the stream's start: %v", err)
	}
	if evs, _, _, ok := rs.Since(sid, 0); !ok || len(evs) != 128 {
		t.Fatalf("with 128 events, %d replayed (ok %v), want 128", len(evs), ok)
	}
	rs.record(sid, []byte("e"), false)
	if _, _, err := rs.Resolve(rs.ID(sid, 0)); !errors.Is(err, errEventIDExpired) {
		t.Fatalf("with 129 events, a resume from before the first: %v, want it expired", err)
	}
	if evs, _, _, ok := rs.Since(sid, 1); !ok || len(evs) != 128 || evs[0].Seq != 2 {
		t.Fatalf("with 129 events, a resume after the first replays %d (ok %v), want 128 from the 2nd", len(evs), ok)
	}
}

// TestReplayKeepsEventsSixtySeconds: an event can be replayed for 60 s, not a nanosecond more.
func TestReplayKeepsEventsSixtySeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rs := NewEventStore()
		sid := rs.Open()
		rs.record(sid, []byte("e1"), false)
		rs.record(sid, []byte("e2"), false)
		time.Sleep(60 * time.Second)
		if _, _, err := rs.Resolve(rs.ID(sid, 0)); err != nil {
			t.Fatalf("an event 60 s old: %v, want it replayed", err)
		}
		time.Sleep(time.Nanosecond)
		if _, _, err := rs.Resolve(rs.ID(sid, 0)); !errors.Is(err, errEventIDExpired) {
			t.Fatalf("an event 60 s and 1 ns old: %v, want it expired", err)
		}
	})
}

// TestReplayKeeps4MiBPerSession: a session's replay holds 4 MiB of event data over all its
// streams; past it the oldest event goes first.
func TestReplayKeeps4MiBPerSession(t *testing.T) {
	rs := NewEventStore()
	a, b := rs.Open(), rs.Open()
	for range 4 {
		rs.record(a, make([]byte, 1<<20), false)
	}
	if _, _, err := rs.Resolve(rs.ID(a, 0)); err != nil {
		t.Fatalf("with 4 MiB kept: %v, want all of it replayed", err)
	}
	rs.record(b, []byte("x"), false) // one byte over
	if _, _, err := rs.Resolve(rs.ID(a, 0)); !errors.Is(err, errEventIDExpired) {
		t.Fatalf("with 4 MiB and a byte: %v, want the oldest event gone", err)
	}
	if evs, _, _, ok := rs.Since(a, 1); !ok || len(evs) != 3 {
		t.Fatalf("with 4 MiB and a byte, %d of the first stream's events kept after its first, want 3", len(evs))
	}
}

// TestReplayKeeps32Streams: a session keeps the logs of its last 32 POST streams; a 33rd
// pushes out the oldest.
func TestReplayKeeps32Streams(t *testing.T) {
	rs := NewEventStore()
	var ids []uint64
	for range 32 {
		sid := rs.Open()
		rs.record(sid, []byte("p"), false)
		ids = append(ids, sid)
	}
	for _, sid := range ids {
		if _, _, err := rs.Resolve(rs.ID(sid, 0)); err != nil {
			t.Fatalf("stream %d of 32: %v", sid, err)
		}
	}
	rs.Open()
	if _, _, err := rs.Resolve(rs.ID(ids[0], 0)); !errors.Is(err, errEventIDUnknown) {
		t.Fatalf("the oldest of 33 streams: %v, want it gone", err)
	}
	if _, _, err := rs.Resolve(rs.ID(ids[1], 0)); err != nil {
		t.Fatalf("the second oldest of 33 streams: %v, want it kept", err)
	}
}
