package gateway

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gemgate/gemgate/gateway/wire"
)

// A client that stops reading its streams must not cost one log line per message: 5,000
// notifications made 4,700 lines. Losses are counted one by one and logged once per session
// per interval.
func TestOutboxLossesLoggedOncePerInterval(t *testing.T) {
	synctest.Test(t, outboxLossesLoggedOncePerInterval) // the interval passes on the bubble's clock
}

func outboxLossesLoggedOncePerInterval(t *testing.T) {
	var logs logBuffer
	dropped, moved := 0, 0
	s := &session{log: slog.New(slog.NewJSONHandler(&logs, nil)), outbox: wire.NewOutbox(func() { dropped++ }, func() { moved++ })}
	for i := range 5000 {
		s.deliver(nil, []byte(strconv.Itoa(i)))
	}
	// A request whose own stream is full: its messages move to the session stream.
	full := &inflight{canStream: true, events: wire.NewEventQueue()}
	for range inflightEvents {
		if !full.events.Push([]byte("queued"), inflightEvents) {
			t.Fatal("the request's own stream refused a message before it was full")
		}
	}
	for i := range 100 {
		s.deliver(full, []byte(strconv.Itoa(i)))
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 {
		t.Errorf("%d log lines for one session's losses within an interval, want 1:\n%s", n, logs.String())
	}
	if dropped != 5100-wire.OutboxSize || moved != 100 {
		t.Errorf("counted %d dropped and %d moved, want %d and 100", dropped, moved, 5100-wire.OutboxSize)
	}
	// After the interval, the next loss writes one more line with what was lost since.
	time.Sleep(wire.LossLogInterval)
	s.deliver(full, []byte("late"))
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines after the interval, want 2", len(lines))
	}
	// The first line reported the first drop; the second, written as "late" moved, the rest.
	if want := `"dropped":` + strconv.Itoa(5100-wire.OutboxSize-1) + `,"moved_to_session_stream":101`; !strings.Contains(lines[1], want) {
		t.Errorf("second line %s lacks %s", lines[1], want)
	}
}

// A message gemgate itself pushes to a full outbox (the liveness ping) logs what it drops,
// as a worker's message does: the loss is counted and said once, not only counted.
func TestOwnPushLogsItsDrops(t *testing.T) {
	var logs logBuffer
	dropped := 0
	s := &session{log: slog.New(slog.NewJSONHandler(&logs, nil)), outbox: wire.NewOutbox(func() { dropped++ }, func() {})}
	for i := range wire.OutboxSize {
		if s.outbox.Push([]byte(strconv.Itoa(i))) != 0 {
			t.Fatal("the outbox dropped a message before it was full")
		}
	}
	s.sendProbe(time.Now())
	if dropped != 1 {
		t.Fatalf("counted %d dropped, want 1", dropped)
	}
	if out := logs.String(); strings.Count(out, "\n") != 1 || !strings.Contains(out, `"dropped":1,`) {
		t.Errorf("the ping's drop was logged as %q, want one line with dropped 1", out)
	}
}

// The step-up's tools/list_changed, pushed to a full outbox, logs what it drops too.
func TestStepUpPushLogsItsDrops(t *testing.T) {
	f := newFixture(t)
	ro := f.client("alice-ro")
	ro.open()
	s := ro.sessionObj()
	for i := range wire.OutboxSize {
		s.outbox.NoteDropped(s.log, s.outbox.Push([]byte(strconv.Itoa(i))))
	}
	if strings.Contains(f.log.String(), "messages dropped") {
		t.Fatal("the outbox dropped a message before it was full")
	}
	rw := &client{f: f, token: "alice-rw", session: ro.session, version: ro.version}
	if r := rw.callTool("7", "write_note", map[string]any{"name": "n", "text": "x"}); r.status != http.StatusOK || r.only(t).Error != nil {
		t.Fatalf("write after step-up: %d %s", r.status, r.body)
	}
	var lines []string
	for l := range strings.SplitSeq(f.log.String(), "\n") {
		if strings.Contains(l, "messages dropped") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `"dropped":1,`) {
		t.Errorf("the step-up's drop was logged as %q, want one line with dropped 1", lines)
	}
}
