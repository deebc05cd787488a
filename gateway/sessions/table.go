package sessions

import (
	"errors"
	"maps"
	"slices"
	"sync"
)

// Table maps session ids to sessions (S) and enforces the caps, overall and per owner (K).
type Table[K, S comparable] struct {
	keyOf    func(S) (id string, owner K)
	mu       sync.Mutex
	byID     map[string]S
	perOwner map[K]int
	reserved int // slots taken by sessions still starting
	max      int
	maxOwner int
}

// NewTable makes a table; a cap of 0 is no cap.
func NewTable[K, S comparable](max, maxPerOwner int, keyOf func(S) (id string, owner K)) *Table[K, S] {
	return &Table[K, S]{keyOf: keyOf, byID: map[string]S{}, perOwner: map[K]int{}, max: max, maxOwner: maxPerOwner}
}

var (
	ErrGatewayFull = errors.New("the gateway is at its session limit; try again later")
	ErrUserFull    = errors.New("you are at your session limit; end a session first")
)

// Reserve takes a slot for a session about to start; Release gives it back if it never opens.
// With both caps reached the answer is the gateway's (503), not the one that blames the caller.
func (t *Table[K, S]) Reserve(o K) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.max > 0 && len(t.byID)+t.reserved >= t.max {
		return ErrGatewayFull
	}
	if t.maxOwner > 0 && t.perOwner[o] >= t.maxOwner {
		return ErrUserFull
	}
	t.reserved++
	t.perOwner[o]++
	return nil
}

func (t *Table[K, S]) Release(o K) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reserved--
	t.drop(o)
}

func (t *Table[K, S]) drop(o K) {
	if t.perOwner[o]--; t.perOwner[o] <= 0 {
		delete(t.perOwner, o)
	}
}

// Commit makes a reserved session visible.
func (t *Table[K, S]) Commit(s S) {
	id, _ := t.keyOf(s)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reserved--
	t.byID[id] = s
}

// Lookup finds a session for its owner; someone else's is absent (the zero S).
func (t *Table[K, S]) Lookup(id string, o K) S {
	t.mu.Lock()
	s, ok := t.byID[id]
	t.mu.Unlock()
	if ok {
		if _, owner := t.keyOf(s); owner == o {
			return s
		}
	}
	var none S
	return none
}

// Remove unmaps a session; it reports false if it was already gone.
func (t *Table[K, S]) Remove(s S) bool {
	id, o := t.keyOf(s)
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, ok := t.byID[id]; !ok || cur != s {
		return false
	}
	delete(t.byID, id)
	t.drop(o)
	return true
}

func (t *Table[K, S]) All() []S {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Collect(maps.Values(t.byID))
}

func (t *Table[K, S]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}
