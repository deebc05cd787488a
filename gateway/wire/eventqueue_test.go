package wire

import (
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestEventQueue: messages come out in order, the bound refuses the one over it, a token is
// there exactly while something may be queued, and taking frees the room.
func TestEventQueue(t *testing.T) {
	q := NewEventQueue()
	select {
	case <-q.ready:
		t.Fatal("a token on an empty queue")
	default:
	}
	for i := range 3 {
		if !q.Push([]byte(strconv.Itoa(i)), 3) {
			t.Fatalf("push %d refused below the bound", i)
		}
	}
	if q.Push([]byte("over"), 3) {
		t.Fatal("push over the bound accepted")
	}
	select {
	case <-q.ready:
	default:
		t.Fatal("no token with three messages queued")
	}
	got := q.Take()
	if len(got) != 3 || string(got[0]) != "0" || string(got[2]) != "2" {
		t.Fatalf("took %q, want 0 1 2", got)
	}
	if len(q.Take()) != 0 {
		t.Fatal("a second take found messages")
	}
	if !q.Push([]byte("again"), 3) {
		t.Fatal("push refused after the queue was emptied")
	}
	select {
	case <-q.ready:
	default:
		t.Fatal("no token for a message pushed after a take")
	}
}

// inflightEvents is the count bound the gateway gives a session's call (session.go).
const inflightEvents = 256

// TestEventQueueBytes: a queue holds its first message whatever its size, and beyond it no
// more than eventQueueBytes: a worker's 16 MiB lines for a call whose reader is behind are
// not held 256 at a time. Taking frees the bytes.
func TestEventQueueBytes(t *testing.T) {
	q := NewEventQueue()
	big := make([]byte, 16<<20)
	if !q.Push(big, inflightEvents) {
		t.Fatal("a first message refused for its size")
	}
	if q.Push(make([]byte, 1), inflightEvents) {
		t.Fatal("a message accepted behind 16 MiB queued")
	}
	q.Take()
	half := make([]byte, eventQueueBytes/2)
	for i := range 2 {
		if !q.Push(half, inflightEvents) {
			t.Fatalf("message %d refused within eventQueueBytes", i)
		}
	}
	if q.Push([]byte("x"), inflightEvents) {
		t.Fatal("a message accepted over eventQueueBytes")
	}
	if got := len(q.Take()); got != 2 {
		t.Fatalf("took %d messages, want 2", got)
	}
	if !q.Push(big, inflightEvents) {
		t.Fatal("push refused after the queue was emptied")
	}
}

// A worker floods a call with progress while the answer stream reads it: the reader, waking on
// the queue's token and taking what is there, receives every message, in order, and is never
// left asleep with messages queued (a lost token would leave it there until the deadline).
func TestReviewEventQueueLosesNoWakeUp(t *testing.T) {
	const n = 20000
	q := NewEventQueue()
	go func() {
		for i := 0; i < n; {
			if q.Push([]byte(strconv.Itoa(i)), 64) {
				i++
			} else {
				runtime.Gosched() // the reader is behind: try again, as the bound tells a sender
			}
		}
	}()
	next := 0
	deadline := time.After(30 * time.Second)
	for next < n {
		select {
		case <-q.ready:
		case <-deadline:
			t.Fatalf("reader asleep after %d of %d messages, %d queued", next, n, len(q.Take()))
		}
		for _, m := range q.Take() {
			if string(m) != strconv.Itoa(next) {
				t.Fatalf("message %q, want %d", m, next)
			}
			next++
		}
	}
}
