package gateway

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/gemgate/gemgate/gateway/sessions"
	"github.com/gemgate/gemgate/jsonrpc"
)

// reap ends or probes each session as the lifetime policy's verdict says (sessions.Reap).
func (g *Gateway) reap(now time.Time) {
	l := g.opts.Lifetime
	for _, s := range g.sessions.All() {
		st := s.state(now)
		reason, probe := l.Verdict(st)
		switch {
		case reason != "" && s.markEnding(st, reason):
			g.endLater(s, reason)
		case probe:
			s.sendProbe(now)
		}
	}
}

func (s *session) key() (id string, o owner) { return s.id, s.owner }

// state is what the reaper reads of s, at one instant.
func (s *session) state(now time.Time) sessions.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sessions.State{
		Now: now, Opened: s.opened, LastActive: s.lastActive, StreamLost: s.streamLost,
		Busy: len(s.calls) > 0, EverStream: s.everStream, StreamOpen: s.outbox.HasStream(),
		Probe: s.currentProbe, CurrentGen: s.outbox.Current(),
	}
}

func (s *session) streamOpened() {
	s.mu.Lock()
	s.everStream = true
	s.streamLost = time.Time{}
	s.mu.Unlock()
}

func (s *session) streamClosed(gen uint64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.outbox.HasStream() && !s.closed {
		s.streamLost = now
	}
}

func (s *session) sendProbe(now time.Time) {
	gid := "gemgate-" + strconv.FormatUint(s.nextOut.Add(1), 10)
	p := &sessions.Probe{Gen: s.outbox.Current(), Sent: now}
	s.mu.Lock()
	if s.currentProbe != nil {
		for id, old := range s.probes {
			if old == s.currentProbe {
				delete(s.probes, id)
			}
		}
	}
	s.currentProbe = p
	if s.probes == nil {
		s.probes = map[string]*sessions.Probe{}
	}
	s.probes[gid] = p
	s.mu.Unlock()
	s.outbox.Push((&jsonrpc.Message{ID: json.RawMessage(strconv.Quote(gid)), Method: "ping"}).Encode())
}
