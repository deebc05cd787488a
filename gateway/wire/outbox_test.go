package wire

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func msgs(from, to int) [][]byte {
	var out [][]byte
	for i := from; i <= to; i++ {
		out = append(out, []byte(strconv.Itoa(i)))
	}
	return out
}

func TestOutboxDropsOldestWhenFull(t *testing.T) {
	drops := 0
	o := NewOutbox(func() { drops++ }, nil)
	gen := o.Attach()
	for i := 1; i <= OutboxSize; i++ {
		if d := o.Push([]byte(strconv.Itoa(i))); d != 0 {
			t.Fatalf("push %d dropped %d below the bound", i, d)
		}
	}
	const over = 10
	for i := OutboxSize + 1; i <= OutboxSize+over; i++ {
		if d := o.Push([]byte(strconv.Itoa(i))); d != 1 {
			t.Fatalf("push %d into a full outbox dropped %d, want 1", i, d)
		}
	}
	if o.dropped != over || drops != over {
		t.Errorf("dropped = %d, hook called %d times, want %d", o.dropped, drops, over)
	}
	got, _, ok := o.Take(gen)
	if !ok {
		t.Fatal("Take on the current stream refused")
	}
	if diff := cmp.Diff(msgs(over+1, OutboxSize+over), got); diff != "" {
		t.Errorf("kept messages (-want +got):\n%s", diff)
	}
	if again, _, _ := o.Take(gen); len(again) != 0 {
		t.Errorf("second Take returned %d messages", len(again))
	}
	// The ring wraps cleanly after draining.
	o.Push([]byte("a"))
	o.Push([]byte("b"))
	if got, _, _ := o.Take(gen); !cmp.Equal(got, [][]byte{[]byte("a"), []byte("b")}) {
		t.Errorf("after wrap: %q", got)
	}
}

func TestOutboxNewestStreamWins(t *testing.T) {
	o := NewOutbox(nil, nil)
	first := o.Attach()
	_, wake, ok := o.Take(first)
	if !ok {
		t.Fatal("first stream refused")
	}
	second := o.Attach()
	select {
	case <-wake:
	default:
		t.Error("attaching a new stream did not wake the old one")
	}
	if _, _, ok := o.Take(first); ok {
		t.Error("the superseded stream may still take messages")
	}
	o.Push([]byte("m"))
	if got, _, ok := o.Take(second); !ok || len(got) != 1 {
		t.Errorf("current stream: ok=%v got %q", ok, got)
	}
	if o.Current() != second || !o.HasStream() {
		t.Errorf("Current() = %d, HasStream() = %v", o.Current(), o.HasStream())
	}
	o.Detach()
	if !o.HasStream() {
		t.Error("detaching the superseded stream left no stream")
	}
	o.Detach()
	if o.HasStream() {
		t.Error("HasStream after both detached")
	}
	_, wake, _ = o.Take(second)
	o.Close()
	select {
	case <-wake:
	default:
		t.Error("Close did not wake the stream")
	}
	if _, _, ok := o.Take(second); ok {
		t.Error("Take after Close succeeded")
	}
}

func TestOutboxPushWakesStream(t *testing.T) {
	o := NewOutbox(nil, nil)
	gen := o.Attach()
	_, wake, _ := o.Take(gen)
	select {
	case <-wake:
		t.Fatal("woken without news")
	default:
	}
	o.Push([]byte("x"))
	select {
	case <-wake:
	default:
		t.Error("Push did not wake the stream")
	}
}

// Invariant 8: the outbox is bounded in bytes too, since one worker line may be 16 MiB.
func TestOutboxIsBoundedInBytes(t *testing.T) {
	o := NewOutbox(nil, nil)
	gen := o.Attach()
	big := make([]byte, 5<<20)
	dropped := 0
	for i := 0; i < 10; i++ {
		big[0] = byte('a' + i)
		dropped += o.Push(append([]byte(nil), big...))
	}
	if o.bytes > outboxBytes {
		t.Errorf("outbox holds %d bytes, more than %d", o.bytes, outboxBytes)
	}
	msgs, _, _ := o.Take(gen)
	if len(msgs) != 3 || dropped != 7 || msgs[2][0] != 'j' || msgs[0][0] != 'h' {
		t.Fatalf("kept %d messages (dropped %d), want the newest 3", len(msgs), dropped)
	}
	// A message larger than the whole bound is still delivered, alone...
	o.Push([]byte("x"))
	o.Push(make([]byte, outboxBytes+1))
	if msgs, _, _ := o.Take(gen); len(msgs) != 1 || len(msgs[0]) != outboxBytes+1 {
		t.Errorf("oversize message: got %d messages", len(msgs))
	}
	// ...and makes way for the next one.
	o.Push(make([]byte, outboxBytes+1))
	o.Push([]byte("y"))
	if msgs, _, _ := o.Take(gen); len(msgs) != 1 || string(msgs[0]) != "y" {
		t.Errorf("after an oversize message: got %d messages", len(msgs))
	}
}

// Take is TakeLogged's messages without their event ids: what a stream would be sent.
func (o *Outbox) Take(gen uint64) ([][]byte, <-chan struct{}, bool) {
	evs, wake, ok := o.TakeLogged(gen)
	var msgs [][]byte
	for _, e := range evs {
		msgs = append(msgs, e.Data)
	}
	return msgs, wake, ok
}

// TestOutboxKeepsExactly16MiB: a session's queue holds 16 MiB, exactly that included; the byte
// after pushes out the oldest message.
func TestOutboxKeepsExactly16MiB(t *testing.T) {
	o := NewOutbox(nil, nil)
	gen := o.Attach()
	for range 16 {
		if n := o.Push(make([]byte, 1<<20)); n != 0 {
			t.Fatalf("within 16 MiB, %d messages dropped", n)
		}
	}
	if n := o.Push(nil); n != 0 {
		t.Errorf("at exactly 16 MiB, an empty message dropped %d", n)
	}
	if n := o.Push([]byte("x")); n != 1 {
		t.Errorf("a byte past 16 MiB dropped %d messages, want the oldest", n)
	}
	if msgs, _, _ := o.Take(gen); len(msgs) != 17 {
		t.Errorf("%d messages delivered, want 17", len(msgs))
	}
}

// TestOutboxLossLinesAreSpaced: a client not reading costs one log line per 10 s, not one a
// message: the first loss is logged at once, those within the next 10 s are counted into the
// line after them; a move is counted and logged like a drop.
func TestOutboxLossLinesAreSpaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}))
		moves := 0
		o := NewOutbox(nil, func() { moves++ })
		lines := func() []string { return strings.Split(strings.TrimSpace(buf.String()), "\n") }

		o.NoteDropped(log, 0) // nothing lost: nothing to say
		if buf.Len() != 0 {
			t.Fatalf("no loss logged: %s", buf.String())
		}
		o.NoteDropped(log, 2)
		if n := len(lines()); n != 1 || !strings.Contains(lines()[0], "dropped=2 moved_to_session_stream=0") {
			t.Fatalf("first loss: %q, want one line with dropped=2", lines())
		}
		time.Sleep(LossLogInterval - time.Nanosecond)
		o.NoteDropped(log, 3)
		o.Moved(log)
		if n := len(lines()); n != 1 {
			t.Fatalf("losses within 10 s logged at once: %q", lines())
		}
		time.Sleep(time.Nanosecond)
		o.Moved(log)
		if l := lines(); len(l) != 2 || !strings.Contains(l[1], "dropped=3 moved_to_session_stream=2") {
			t.Errorf("10 s on: %q, want a second line with dropped=3 and 2 moved", l)
		}
		if moves != 2 {
			t.Errorf("%d moves counted, want 2", moves)
		}
	})
}
