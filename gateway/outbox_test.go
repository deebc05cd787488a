package gateway

import (
	"strconv"
	"testing"

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
	o := newOutbox(func() { drops++ })
	gen := o.Attach()
	for i := 1; i <= outboxSize; i++ {
		if d := o.Push([]byte(strconv.Itoa(i))); d != 0 {
			t.Fatalf("push %d dropped %d below the bound", i, d)
		}
	}
	const over = 10
	for i := outboxSize + 1; i <= outboxSize+over; i++ {
		if d := o.Push([]byte(strconv.Itoa(i))); d != 1 {
			t.Fatalf("push %d into a full outbox dropped %d, want 1", i, d)
		}
	}
	if o.Dropped() != over || drops != over {
		t.Errorf("Dropped() = %d, hook called %d times, want %d", o.Dropped(), drops, over)
	}
	got, _, ok := o.Take(gen)
	if !ok {
		t.Fatal("Take on the current stream refused")
	}
	if diff := cmp.Diff(msgs(over+1, outboxSize+over), got); diff != "" {
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
	o := newOutbox(nil)
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
	o.Detach(first)
	if !o.HasStream() {
		t.Error("detaching the superseded stream left no stream")
	}
	o.Detach(second)
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
	o := newOutbox(nil)
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
