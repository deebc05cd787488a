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

// TestReplayBytesBoundIsExact: past 4 MiB the oldest events go until the replay is within
// 4 MiB again, and no further: at exactly 4 MiB nothing more is dropped.
func TestReplayBytesBoundIsExact(t *testing.T) {
	rs := NewEventStore()
	a, b := rs.Open(), rs.Open()
	for range 4 {
		rs.record(a, make([]byte, 1<<20), false)
	}
	rs.record(b, make([]byte, 1<<20), false) // 5 MiB: the first MiB goes, 4 are left
	if evs, _, _, ok := rs.Since(a, 1); !ok || len(evs) != 3 {
		t.Errorf("back at exactly 4 MiB, %d of the first stream's events kept after its first, want 3", len(evs))
	}
	if evs, _, _, ok := rs.Since(b, 0); !ok || len(evs) != 1 {
		t.Errorf("the newest event: %d kept (ok %v), want 1", len(evs), ok)
	}
}

// TestReplayKeepsTheNewestEvent: the event just written stays replayable, however large: the
// byte bound takes the other streams' events first, and never the newest.
func TestReplayKeepsTheNewestEvent(t *testing.T) {
	rs := NewEventStore()
	empty, a, b := rs.Open(), rs.Open(), rs.Open()
	rs.record(a, []byte("x"), false)
	rs.record(b, make([]byte, 5<<20), false)
	if evs, _, _, ok := rs.Since(b, 0); !ok || len(evs) != 1 || len(evs[0].Data) != 5<<20 {
		t.Errorf("a 5 MiB answer just written: %d events replayable (ok %v), want it", len(evs), ok)
	}
	if _, _, err := rs.Resolve(rs.ID(a, 0)); !errors.Is(err, errEventIDExpired) {
		t.Errorf("an older stream's event under a 5 MiB one: %v, want it gone", err)
	}
	if _, _, err := rs.Resolve(rs.ID(empty, 0)); err != nil {
		t.Errorf("a stream with nothing to drop: %v", err)
	}
}

// TestReplayRetentionIsExact: each event and each ended stream is kept 60 s from its own
// time, not a nanosecond less, even when the sweep runs for an older one.
func TestReplayRetentionIsExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rs := NewEventStore()
		sid := rs.Open()
		rs.record(sid, []byte("e1"), false)
		time.Sleep(time.Nanosecond)
		rs.record(sid, []byte("e2"), false)
		time.Sleep(ResumeRetention) // e1 is 60 s and 1 ns old, e2 exactly 60 s
		if _, _, err := rs.Resolve(rs.ID(sid, 1)); err != nil {
			t.Errorf("a resume after e1, e2 exactly 60 s old: %v, want e2 replayed", err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		rs := NewEventStore()
		a := rs.Open()
		rs.record(a, []byte("answer"), true)
		time.Sleep(time.Nanosecond)
		b := rs.Open()
		rs.record(b, []byte("answer"), true)
		time.Sleep(ResumeRetention) // a ended 60 s and 1 ns ago, b exactly 60 s ago
		if _, _, err := rs.Resolve(rs.ID(b, 1)); err != nil {
			t.Errorf("a stream that ended exactly 60 s ago: %v, want it kept", err)
		}
		if _, _, err := rs.Resolve(rs.ID(a, 1)); !errors.Is(err, errEventIDUnknown) {
			t.Errorf("a stream that ended 60 s and 1 ns ago: %v, want it gone", err)
		}
	})
}

// TestReplayEndedStreamGoesAfter60s: a stream that ended after its last event (a cancelled
// call) is kept 60 s from its end, and then gone, though nothing else is written meanwhile.
func TestReplayEndedStreamGoesAfter60s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rs := NewEventStore()
		sid := rs.Open()
		rs.record(sid, []byte("progress"), false)
		time.Sleep(30 * time.Second)
		rs.Finish(sid)
		time.Sleep(30*time.Second + time.Nanosecond) // the event's 60 s are over, the end's not
		if _, _, err := rs.Resolve(rs.ID(sid, 1)); err != nil {
			t.Fatalf("30 s after the stream ended: %v, want it kept", err)
		}
		time.Sleep(30 * time.Second)
		if _, _, err := rs.Resolve(rs.ID(sid, 1)); !errors.Is(err, errEventIDUnknown) {
			t.Errorf("60 s and 1 ns after the stream ended: %v, want it gone", err)
		}
	})
}

// TestReplayPushesOutAFinishedStreamFirst: past 32 streams, the oldest finished one goes
// before an older one still running, whose answer its client may yet resume.
func TestReplayPushesOutAFinishedStreamFirst(t *testing.T) {
	rs := NewEventStore()
	running := rs.Open()
	rs.record(running, []byte("progress"), false)
	var finished []uint64
	for range 31 {
		sid := rs.Open()
		rs.record(sid, []byte("answer"), true)
		finished = append(finished, sid)
	}
	rs.Open() // the 33rd
	if _, _, err := rs.Resolve(rs.ID(running, 1)); err != nil {
		t.Errorf("the oldest stream, still running: %v, want it kept", err)
	}
	if _, _, err := rs.Resolve(rs.ID(finished[0], 1)); !errors.Is(err, errEventIDUnknown) {
		t.Errorf("the oldest finished stream: %v, want it gone", err)
	}
	if _, _, err := rs.Resolve(rs.ID(finished[1], 1)); err != nil {
		t.Errorf("the second oldest finished stream: %v, want it kept", err)
	}
}
