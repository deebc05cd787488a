package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/gemgate/gemgate/worker"
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

// The worker's requests waiting on the client are bounded; past the bound the worker is
// refused at once instead of the gateway remembering without end.
func TestWorkerRequestsAwaitingTheClientAreBounded(t *testing.T) {
	l := &testLauncher{mode: "demo", dataDir: t.TempDir()}
	la, err := l.Launch(context.Background(), Identity{Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	proc, err := worker.Start(la.Spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.Stop)
	s := bareSession()
	s.proc, s.log = proc, slog.New(slog.DiscardHandler)
	for i := 0; i < maxWorkerRequests+10; i++ {
		s.onWorkerMessage(&worker.Message{ID: json.RawMessage(strconv.Itoa(i)), Method: "sampling/createMessage", Params: json.RawMessage(`{}`)})
	}
	s.mu.Lock()
	waiting := len(s.toWorker)
	s.mu.Unlock()
	if waiting != maxWorkerRequests {
		t.Errorf("%d worker requests remembered, want the bound %d", waiting, maxWorkerRequests)
	}
	msgs, _, _ := s.outbox.Take(s.outbox.Current())
	if len(msgs) != maxWorkerRequests {
		t.Errorf("%d requests queued for the client, want %d", len(msgs), maxWorkerRequests)
	}
}
