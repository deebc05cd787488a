package wire

import "sync"

// EventQueue holds, in order, the messages a call's answer stream has yet to write: what the
// worker sends about a request before its answer (progress, its own requests). It replaces a
// channel of inflightEvents slots per call, 6 KiB made on every call although most calls
// carry no such message: the queue grows only with what is in it, and is bounded the same.
type EventQueue struct {
	mu    sync.Mutex
	msgs  [][]byte
	bytes int           // of msgs
	ready chan struct{} // holds a token while msgs may be non-empty; capacity 1
}

// eventQueueBytes bounds the bytes a call's queue holds beyond its first message (a worker's
// line may be 16 MiB, and a call's stream takes one whatever its size): a reader that is
// behind by more costs no more, whatever the count of messages allows.
const eventQueueBytes = 1 << 20

// NewEventQueue is an empty queue.
func NewEventQueue() EventQueue { return EventQueue{ready: make(chan struct{}, 1)} }

// Push queues msg unless max messages, or eventQueueBytes with msg, are queued already (the
// reader is behind: the caller sends msg elsewhere), and wakes the reader.
func (q *EventQueue) Push(msg []byte, max int) bool {
	q.mu.Lock()
	if len(q.msgs) >= max || len(q.msgs) > 0 && q.bytes+len(msg) > eventQueueBytes {
		q.mu.Unlock()
		return false
	}
	q.msgs = append(q.msgs, msg)
	q.bytes += len(msg)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default: // a token is there already: the reader will take this message with it
	}
	return true
}

// Ready holds a token while messages may be queued: the reader's wake-up.
func (q *EventQueue) Ready() <-chan struct{} { return q.ready }

// Take returns every queued message, oldest first, and empties the queue.
func (q *EventQueue) Take() [][]byte {
	q.mu.Lock()
	msgs := q.msgs
	q.msgs, q.bytes = nil, 0
	q.mu.Unlock()
	return msgs
}
