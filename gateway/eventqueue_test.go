package gateway

import (
	"strconv"
	"testing"
)

// TestEventQueue: messages come out in order, the bound refuses the one over it, a token is
// there exactly while something may be queued, and taking frees the room.
func TestEventQueue(t *testing.T) {
	q := newEventQueue()
	select {
	case <-q.ready:
		t.Fatal("a token on an empty queue")
	default:
	}
	for i := range 3 {
		if !q.push([]byte(strconv.Itoa(i)), 3) {
			t.Fatalf("push %d refused below the bound", i)
		}
	}
	if q.push([]byte("over"), 3) {
		t.Fatal("push over the bound accepted")
	}
	select {
	case <-q.ready:
	default:
		t.Fatal("no token with three messages queued")
	}
	got := q.take()
	if len(got) != 3 || string(got[0]) != "0" || string(got[2]) != "2" {
		t.Fatalf("took %q, want 0 1 2", got)
	}
	if len(q.take()) != 0 {
		t.Fatal("a second take found messages")
	}
	if !q.push([]byte("again"), 3) {
		t.Fatal("push refused after the queue was emptied")
	}
	select {
	case <-q.ready:
	default:
		t.Fatal("no token for a message pushed after a take")
	}
}

// TestEventQueueBytes: a queue holds its first message whatever its size, and beyond it no
// more than eventQueueBytes: a worker's 16 MiB lines for a call whose reader is behind are
// not held 256 at a time. Taking frees the bytes.
func TestEventQueueBytes(t *testing.T) {
	q := newEventQueue()
	big := make([]byte, 16<<20)
	if !q.push(big, inflightEvents) {
		t.Fatal("a first message refused for its size")
	}
	if q.push(make([]byte, 1), inflightEvents) {
		t.Fatal("a message accepted behind 16 MiB queued")
	}
	q.take()
	half := make([]byte, eventQueueBytes/2)
	for i := range 2 {
		if !q.push(half, inflightEvents) {
			t.Fatalf("message %d refused within eventQueueBytes", i)
		}
	}
	if q.push([]byte("x"), inflightEvents) {
		t.Fatal("a message accepted over eventQueueBytes")
	}
	if got := len(q.take()); got != 2 {
		t.Fatalf("took %d messages, want 2", got)
	}
	if !q.push(big, inflightEvents) {
		t.Fatal("push refused after the queue was emptied")
	}
}
