package gateway

// The figures README.md and docs state, read as numbers rather than through the constants'
// names: a test that follows a constant lets the documented figure change unnoticed.

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gemgate/gemgate/gateway/sessions"
)

// TestKeepaliveEveryFifteenSeconds: with no interval set, as gemgate runs, each stream's
// keepalive ticker first ticks within 15 s of the stream's start and then every 15 s exactly
// (README: "keepalive every 15 s").
func TestKeepaliveEveryFifteenSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t, sessions.Lifetime{})
		const interval = 15 * time.Second
		for i := range 3 { // streams of their own
			start := time.Now()
			s := b.gw.keepalive.slot()
			<-s.tick()
			if first := time.Since(start); first > interval || first <= 0 {
				t.Fatalf("stream %d: first keepalive %v after its start, want within %v", i, first, interval)
			}
			at := time.Now()
			<-s.tick()
			if gap := time.Since(at); gap != interval {
				t.Fatalf("stream %d: keepalives %v apart, want %v", i, gap, interval)
			}
		}
	})
}

// TestReplayKeeps128EventsPerStream: a stream's last 128 events can be replayed; the 129th
// pushes out the first.
func TestReplayKeeps128EventsPerStream(t *testing.T) {
	rs, _ := newTestStore()
	sid := rs.open()
	for range 128 {
		rs.record(sid, []byte("e"), false)
	}
	if _, _, err := rs.resolve(rs.eventID(sid, 0)); err != nil {
		t.Fatalf("with 128 events, a resume from the stream's start: %v", err)
	}
	if evs, _, _, ok := rs.since(sid, 0); !ok || len(evs) != 128 {
		t.Fatalf("with 128 events, %d replayed (ok %v), want 128", len(evs), ok)
	}
	rs.record(sid, []byte("e"), false)
	if _, _, err := rs.resolve(rs.eventID(sid, 0)); !errors.Is(err, errEventIDExpired) {
		t.Fatalf("with 129 events, a resume from before the first: %v, want it expired", err)
	}
	if evs, _, _, ok := rs.since(sid, 1); !ok || len(evs) != 128 || evs[0].seq != 2 {
		t.Fatalf("with 129 events, a resume after the first replays %d (ok %v), want 128 from the 2nd", len(evs), ok)
	}
}

// TestReplayKeepsEventsSixtySeconds: an event can be replayed for 60 s, not a nanosecond more.
func TestReplayKeepsEventsSixtySeconds(t *testing.T) {
	rs, clock := newTestStore()
	sid := rs.open()
	rs.record(sid, []byte("e1"), false)
	rs.record(sid, []byte("e2"), false)
	clock.add(60 * time.Second)
	if _, _, err := rs.resolve(rs.eventID(sid, 0)); err != nil {
		t.Fatalf("an event 60 s old: %v, want it replayed", err)
	}
	clock.add(time.Nanosecond)
	if _, _, err := rs.resolve(rs.eventID(sid, 0)); !errors.Is(err, errEventIDExpired) {
		t.Fatalf("an event 60 s and 1 ns old: %v, want it expired", err)
	}
}

// TestReplayKeeps4MiBPerSession: a session's replay holds 4 MiB of event data over all its
// streams; past it the oldest event goes first.
func TestReplayKeeps4MiBPerSession(t *testing.T) {
	rs, _ := newTestStore()
	a, b := rs.open(), rs.open()
	for range 4 {
		rs.record(a, make([]byte, 1<<20), false)
	}
	if _, _, err := rs.resolve(rs.eventID(a, 0)); err != nil {
		t.Fatalf("with 4 MiB kept: %v, want all of it replayed", err)
	}
	rs.record(b, []byte("x"), false) // one byte over
	if _, _, err := rs.resolve(rs.eventID(a, 0)); !errors.Is(err, errEventIDExpired) {
		t.Fatalf("with 4 MiB and a byte: %v, want the oldest event gone", err)
	}
	if evs, _, _, ok := rs.since(a, 1); !ok || len(evs) != 3 {
		t.Fatalf("with 4 MiB and a byte, %d of the first stream's events kept after its first, want 3", len(evs))
	}
}

// TestReplayKeeps32Streams: a session keeps the logs of its last 32 POST streams; a 33rd
// pushes out the oldest.
func TestReplayKeeps32Streams(t *testing.T) {
	rs, _ := newTestStore()
	var ids []uint64
	for range 32 {
		sid := rs.open()
		rs.record(sid, []byte("p"), false)
		ids = append(ids, sid)
	}
	for _, sid := range ids {
		if _, _, err := rs.resolve(rs.eventID(sid, 0)); err != nil {
			t.Fatalf("stream %d of 32: %v", sid, err)
		}
	}
	rs.open()
	if _, _, err := rs.resolve(rs.eventID(ids[0], 0)); !errors.Is(err, errEventIDUnknown) {
		t.Fatalf("the oldest of 33 streams: %v, want it gone", err)
	}
	if _, _, err := rs.resolve(rs.eventID(ids[1], 0)); err != nil {
		t.Fatalf("the second oldest of 33 streams: %v, want it kept", err)
	}
}

// TestPrimingEventAnnouncesRetry1000: every SSE stream, the GET stream and a POST answer
// stream, starts with a priming event with an id and "retry: 1000" (README).
func TestPrimingEventAnnouncesRetry1000(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	first := func(what string, b *bufio.Reader) []string {
		t.Helper()
		var lines []string
		for {
			line, err := b.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v after %q", what, err, lines)
			}
			line = strings.TrimSuffix(line, "\n")
			if line == "" {
				return lines
			}
			lines = append(lines, line)
		}
	}
	check := func(what string, ev []string) {
		t.Helper()
		if len(ev) != 3 || !strings.HasPrefix(ev[0], "id: ") || ev[1] != "retry: 1000" || ev[2] != "data: " {
			t.Errorf("%s starts with the event %q, want id, \"retry: 1000\", empty data", what, ev)
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := c.newRequest(ctx, http.MethodGet, nil, "Accept", "text/event-stream")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	check("the GET stream", first("the GET stream", bufio.NewReader(resp.Body)))

	r := c.callTool("2", "echo", map[string]any{"text": "x"})
	if !strings.HasPrefix(r.contentType(), "text/event-stream") {
		t.Fatalf("POST answer: Content-Type %q", r.contentType())
	}
	check("a POST answer stream", first("a POST answer stream", bufio.NewReader(strings.NewReader(string(r.body)))))
}
