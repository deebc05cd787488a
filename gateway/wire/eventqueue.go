package wire

import "sync"

// EventQueue holds what the worker sends about a call before its answer; it grows only with
// what is in it (a channel cost 6 KiB per call).
type EventQueue struct {
	mu    sync.Mutex
	msgs  [][]byte
	bytes int           // of msgs
	ready chan struct{} // holds a token while msgs may be non-empty; capacity 1
}

// eventQueueBytes bounds a queue's bytes beyond its first message (which may be 16 MiB).
const eventQueueBytes = 1 << 20

func NewEventQueue() EventQueue { return EventQueue{ready: make(chan struct{}, 1)} }

// Push queues msg and wakes the reader; false when full (the caller sends msg elsewhere).
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
	default: // a token is there already
	}
	return true
}

// Ready holds a token while messages may be queued: the reader's wake-up.
func (q *EventQueue) Ready() <-chan struct{} { return q.ready }

func (q *EventQueue) Take() [][]byte {
	q.mu.Lock()
	msgs := q.msgs
	q.msgs, q.bytes = nil, 0
	q.mu.Unlock()
	return msgs
}
