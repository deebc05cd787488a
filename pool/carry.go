package pool

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/gemgate/gemgate/jsonrpc"
)

// carryLocked gives w, a worker just started in the slot, the subscriptions and logging
// levels its callers held at the previous one, since their clients were told of no change.
// It returns the URIs for tellCarried.
func (s *slot) carryLocked(w *wrk) []string {
	prev := s.prev
	s.prev = nil
	if prev == nil {
		return nil
	}
	for m := range s.members {
		uris, level := prev.heldLocked(m, true)
		w.takeOverLocked(m, uris, level)
	}
	return slices.Collect(maps.Keys(w.subs))
}

// tellCarried subscribes w to the URIs carried over from another worker, and sets it to the
// most verbose logging level its callers asked for, before it takes their calls.
func (w *wrk) tellCarried(s *slot, uris []string) {
	for _, uri := range uris {
		w.reconcile(s, uri)
	}
	s.mu.Lock()
	most := w.mostVerboseLocked()
	if most < 0 || w.level == most {
		s.mu.Unlock()
		return
	}
	w.level = most
	s.mu.Unlock()
	msg := &jsonrpc.Message{ID: json.RawMessage(`"gemgate-setLevel"`), Method: "logging/setLevel",
		Params: s.ownParams(stringParams("level", levelNames[most]))}
	if c, err := w.proc.Send(context.Background(), msg, nil); err == nil {
		c.Abandon()
	}
}

// heldLocked is what m asked of w that survives it: its subscribed URIs and its logging level
// (-1 if none). Unless settled, unanswered subscribes are included; a later refusal follows m
// (unfollowSub).
func (w *wrk) heldLocked(m *Member, settled bool) (uris []string, level int) {
	for uri, subs := range w.subs {
		if subs[m] && !(settled && w.subPending[uri][m] > 0) {
			uris = append(uris, uri)
		}
	}
	level, set := w.levels[m]
	if !set {
		level = -1
	}
	return uris, level
}

// takeOverLocked gives w what m held at another worker (heldLocked); tellCarried then tells w.
func (w *wrk) takeOverLocked(m *Member, uris []string, level int) {
	for _, uri := range uris {
		w.addSubLocked(uri, m)
	}
	if level >= 0 {
		w.levels[m] = level
	}
}

// unfollowSub uncounts m for uri at its new worker, after its old worker refused the
// subscribe that came along with the move.
func (m *Member) unfollowSub(from *slot, uri string) {
	s := m.s.Load()
	if s == nil || s == from {
		return
	}
	s.mu.Lock()
	w := s.w
	if w != nil {
		w.dropSubLocked(uri, m)
	}
	s.mu.Unlock()
	if w != nil {
		w.reconcile(s, uri)
	}
}
