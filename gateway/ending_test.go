package gateway

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func bareSession() *Session {
	return &Session{
		calls: map[string]*inflight{}, progress: map[string]*inflight{}, toWorker: map[string]json.RawMessage{},
		probes: map[string]*probe{}, hints: map[string]bool{}, outbox: newOutbox(nil), lastActive: time.Now(),
	}
}

// The reaper decides on a snapshot; a request that arrives after the snapshot must win.
func TestReaperVerdictYieldsToALaterRequest(t *testing.T) {
	s := bareSession()
	st := s.state(time.Now())
	if !s.touch(time.Now()) {
		t.Fatal("touch refused on a live session")
	}
	if s.markEnding(st) {
		t.Fatal("the reaper claimed a session a request had revived after its snapshot")
	}

	st = s.state(time.Now())
	if _, err := s.startCall(json.RawMessage(`1`), nil, true); err != nil {
		t.Fatal(err)
	}
	if s.markEnding(st) {
		t.Fatal("the reaper claimed a session with a call in flight")
	}
}

func TestAClaimedSessionRefusesRequests(t *testing.T) {
	s := bareSession()
	if !s.markEnding(s.state(time.Now())) {
		t.Fatal("an unchanged session should be claimable")
	}
	if s.touch(time.Now()) {
		t.Error("touch accepted a request on a session being ended")
	}
	if _, err := s.startCall(json.RawMessage(`2`), nil, true); !errors.Is(err, errEnding) {
		t.Errorf("startCall = %v, want errEnding", err)
	}
}
