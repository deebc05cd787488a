package gateway

import (
	"errors"
	"sync"
)

// table maps session ids to sessions and enforces the session limits.
type table struct {
	mu       sync.Mutex
	byID     map[string]*session
	perOwner map[owner]int
	reserved int // slots taken by sessions still starting
	max      int
	maxOwner int
}

func newTable(max, maxPerOwner int) *table {
	return &table{byID: map[string]*session{}, perOwner: map[owner]int{}, max: max, maxOwner: maxPerOwner}
}

// Why a session cannot be reserved.
var (
	errGatewayFull = errors.New("the gateway is at its session limit; try again later")
	errUserFull    = errors.New("you are at your session limit; end a session first")
)

// reserve takes a slot for a session about to start; release gives it back if it never
// opens. A cap of 0 is no cap. The gateway's cap is checked first: when both are reached the
// answer is the one no client can help (503), not the one that blames the caller.
func (t *table) reserve(o owner) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.max > 0 && len(t.byID)+t.reserved >= t.max {
		return errGatewayFull
	}
	if t.maxOwner > 0 && t.perOwner[o] >= t.maxOwner {
		return errUserFull
	}
	t.reserved++
	t.perOwner[o]++
	return nil
}

func (t *table) release(o owner) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reserved--
	t.drop(o)
}

func (t *table) drop(o owner) {
	if t.perOwner[o]--; t.perOwner[o] <= 0 {
		delete(t.perOwner, o)
	}
}

// commit makes a reserved session visible.
func (t *table) commit(s *session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reserved--
	t.byID[s.id] = s
}

// lookup finds a session for its owner. A session of someone else is reported as absent.
func (t *table) lookup(id string, o owner) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[id]
	if s == nil || s.owner != o {
		return nil
	}
	return s
}

// remove unmaps a session; it reports false if it was already gone.
func (t *table) remove(s *session) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID[s.id] != s {
		return false
	}
	delete(t.byID, s.id)
	t.drop(s.owner)
	return true
}

func (t *table) all() []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*session, 0, len(t.byID))
	for _, s := range t.byID {
		out = append(out, s)
	}
	return out
}

func (t *table) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}
