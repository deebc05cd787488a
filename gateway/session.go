package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/sessions"
	"github.com/gemgate/gemgate/gateway/wire"
	textclip "github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// owner is who a session belongs to: a request on it with anyone else's token meets 404.
type owner struct{ issuer, subject string }

func ownerOf(p auth.Principal) owner { return owner{p.Issuer, p.Subject} }

// session is one client session, attached to a worker of the pool.
type session struct {
	id     string
	owner  owner
	member *pool.Member
	outbox *wire.Outbox
	log    *slog.Logger // through logh, whose worker changes on step-up
	logh   *sessions.Log
	opened time.Time
	end    func(reason string) // ends the session when the pool lets it go
	// primes: its SSE streams start with a priming event (an id, empty data: SEP-1699), which
	// only a client of 2025-11-25 or later expects; an earlier one parses every event's data
	// as a message, as the reference SDK servers know (they prime from 2025-11-25 on).
	primes bool

	// Guarded by Gateway.mu (admit, endLater).
	admitted  bool
	lostEarly string

	mu            sync.Mutex
	access        policy.Access   // a request can narrow it; a write token moves it to the read-write worker
	steppedUp     context.Context // readWriteLater
	stepUpStreams context.CancelFunc
	calls         map[string]*inflight    // by the client's raw request id; made at the first call
	currentProbe  *sessions.Probe         // the latest liveness ping, nil since the last activity
	probeID       string                  // currentProbe's id until it is answered; else ""
	hints         map[string]policy.Hints // per tool, from tools/list
	hintsWorker   string                  // the worker (Member.WorkerID) whose tools/list answers hints are
	hintsEpoch    uint64                  // counts the times hints were forgotten (forgetHints, a step-up)
	lastActive    time.Time               // monotonic: a host suspend does not count as idleness
	streamLost    time.Time               // when the last GET stream ended; zero while one is open or never
	ending        bool                    // the reaper has claimed it; requests meet 404
	closed        bool

	nextOut atomic.Uint64
	done    chan struct{}
}

// inflight is one client request waiting for the worker.
type inflight struct {
	call         *pool.Call // set under session.mu once the request is handed to the pool
	clientID     json.RawMessage
	cancelledBy  string          // the client's reason, once it cancelled; guarded by session.mu
	wasCancelled bool            // guarded by session.mu
	events       wire.EventQueue // messages related to this request, for its SSE response
	cancelled    chan struct{}   // closed when the client cancels the request
	canStream    bool
	readOnly     bool   // made with read-only access
	hintsEpoch   uint64 // session.hintsEpoch when the request began: its list answer is learnt only if still so
	worker       string // the worker the call was made at: its list answer is learnt only if still the running one
	cancel       sync.Once
}

const inflightEvents = 256

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: it crashes the program instead
	return hex.EncodeToString(b[:])
}

// touch records client activity; false for a session the reaper claimed (the request meets 404).
// over reports whether the session is ending or closed: its requests meet 404.
func (s *session) over() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ending || s.closed
}

func (s *session) touch(now time.Time) bool {
	s.mu.Lock()
	if s.ending || s.closed {
		s.mu.Unlock()
		return false
	}
	s.lastActive = now
	s.streamLost = time.Time{}
	s.currentProbe, s.probeID = nil, "" // its answer decides nothing now
	s.mu.Unlock()
	return true
}

// markEnding claims the session for the reaper unless a request revived it since st (expired:
// whatever it did).
func (s *session) markEnding(st sessions.State, reason string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ending || s.closed {
		return false
	}
	if reason != sessions.ReasonExpired {
		if len(s.calls) > 0 || !s.lastActive.Equal(st.LastActive) || !s.streamLost.Equal(st.StreamLost) {
			return false
		}
		if st.StreamOpen != s.outbox.HasStream() {
			return false
		}
	}
	s.ending = true
	return true
}

// startCall registers a call; a session ending, an id in flight or too many calls refuse it.
func (s *session) startCall(id json.RawMessage, canStream, readOnly bool, max int) (*inflight, *wire.Error) {
	inf := &inflight{clientID: id, events: wire.NewEventQueue(), cancelled: make(chan struct{}), canStream: canStream, readOnly: readOnly}
	s.mu.Lock()
	defer s.mu.Unlock()
	inf.hintsEpoch = s.hintsEpoch
	if s.ending || s.closed {
		return nil, wire.SessionNotFound(id)
	}
	key := string(id)
	if _, dup := s.calls[key]; dup {
		return nil, &wire.Error{Status: http.StatusOK, Code: jsonrpc.CodeInvalidRequest, ID: id,
			Message: "a request with this id is already in flight"}
	}
	if max > 0 && len(s.calls) >= max {
		return nil, busy(id, fmt.Sprintf("too many calls in flight on this session (limit %d); wait for one to finish", max))
	}
	if s.calls == nil {
		s.calls = make(map[string]*inflight, 1)
	}
	s.calls[key] = inf
	return inf, nil
}

func (s *session) endCall(inf *inflight) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls[string(inf.clientID)] == inf {
		delete(s.calls, string(inf.clientID))
	}
	s.lastActive = time.Now()
}

// cancelCall tells the worker, and the POST ends with 202 and no answer.
func (s *session) cancelCall(requestID json.RawMessage, reason string) bool {
	s.mu.Lock()
	inf := s.calls[string(requestID)]
	var call *pool.Call
	if inf != nil {
		call = inf.call
		inf.wasCancelled, inf.cancelledBy = true, reason
	}
	s.mu.Unlock()
	if inf == nil {
		return false
	}
	inf.cancel.Do(func() {
		if call != nil {
			call.Cancel(reason)
		} // else the request is still on its way to the worker: setCall cancels it there
		close(inf.cancelled)
	})
	return true
}

// setCall records a request's worker call, and passes on a cancel that came meanwhile.
func (s *session) setCall(inf *inflight, call *pool.Call) {
	s.mu.Lock()
	inf.call = call
	cancelled, reason := inf.wasCancelled, inf.cancelledBy
	s.mu.Unlock()
	if cancelled {
		call.Cancel(reason)
	}
}

// Deliver routes a worker's message: to its call's SSE response when it can take one (a
// worker's request only while there is no GET stream), else to the outbox. A call's request
// that neither can take (its POST answers JSON only, and no GET stream is open) is answered
// by gemgate at once: in the outbox it would wait for a stream the client may never open,
// and the call with it.
func (s *session) Deliver(d pool.Delivery) {
	var inf *inflight
	if d.Call != nil {
		inf, _ = d.Call.Tag().(*inflight)
	}
	if d.Request && s.outbox.HasStream() {
		inf = nil
	} else if d.Request && inf != nil && !inf.canStream && s.unreachable(d.Message) {
		return
	}
	if !d.Request && toolsListChanged(d.Message) {
		s.forgetHints()
	}
	s.deliver(inf, d.Message)
}

// unreachable answers a worker's request for a call whose POST cannot carry it, with no GET
// stream to take it instead (Member.Unreachable); false if it is not open any more.
func (s *session) unreachable(msg []byte) bool {
	m, err := jsonrpc.Parse(msg, jsonrpc.Options{})
	return err == nil && s.member.Unreachable(m.ID,
		"the call that asked accepts only a JSON answer, and the session has no GET stream to ask on")
}

// toolsListChanged reports whether a worker's message is notifications/tools/list_changed.
func toolsListChanged(msg []byte) bool {
	if !bytes.Contains(msg, []byte("list_changed")) { // most messages: not parsed
		return false
	}
	m, err := jsonrpc.Parse(msg, jsonrpc.Options{})
	return err == nil && m.IsNotification() && m.Method == "notifications/tools/list_changed"
}

// forgetHints forgets the annotations of the worker's tools the session's tool gate kept from
// its tools/list answers (learnHints), when the worker says its list changed: the gate then
// decides on the worker's current list until the client lists the tools again. A list answer
// of a request begun before is not learnt either (learnHints): the change may follow it.
func (s *session) forgetHints() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetHintsLocked()
}

func (s *session) forgetHintsLocked() {
	clear(s.hints)
	s.hintsEpoch++
}

func (s *session) LastActive() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastActive
}

// CanTakeRequest: a worker's request can reach the client now, on its GET stream.
func (s *session) CanTakeRequest() bool { return s.outbox.HasStream() }

// Detached ends the session when the pool lets it go (its worker died or expired).
func (s *session) Detached(reason string) { s.end(reason) }

func (s *session) deliver(inf *inflight, msg []byte) {
	if inf != nil && inf.canStream {
		if inf.events.Push(msg, inflightEvents) {
			return
		}
		s.outbox.Moved(s.log)
	}
	s.outbox.NoteDropped(s.log, s.outbox.Push(msg))
}

// isProbeAnswer reports whether m answers a liveness probe: not activity for the idle clock.
func (s *session) isProbeAnswer(m *jsonrpc.Message) bool {
	if !m.IsResponse() {
		return false
	}
	var gid string // escapes: made only for a response
	if json.Unmarshal(m.ID, &gid) != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return gid != "" && gid == s.probeID
}

// clientResponse routes the client's response to a liveness probe or, audited, to the worker.
func (s *session) clientResponse(m *jsonrpc.Message, readOnly bool) error {
	var gid string
	if err := json.Unmarshal(m.ID, &gid); err != nil {
		s.log.Debug("client answered an id the gateway never sent", "id", textclip.Bytes(m.ID, 128))
		return nil
	}
	var pr *sessions.Probe
	s.mu.Lock()
	if gid != "" && gid == s.probeID {
		pr, s.probeID = s.currentProbe, ""
	}
	s.mu.Unlock()
	if pr != nil {
		pr.Answer()
		return nil
	}
	info, err := s.member.Answer(m, readOnly)
	switch {
	case errors.Is(err, pool.ErrNoSuchRequest):
		s.log.Debug("client answered an unknown or expired request", "id", gid)
	case errors.Is(err, pool.ErrNotEntitled):
		auditAnswer(s.log, info, readOnly, "refused")
		return err
	case err != nil:
		auditAnswer(s.log, info, readOnly, "answered")
		s.log.Warn("could not pass the client's answer to the worker", "error", err)
	default:
		auditAnswer(s.log, info, readOnly, "answered")
	}
	return nil
}

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
	gen := s.outbox.Current() // 0 until a GET stream first attaches or the session ends
	return sessions.State{
		Now: now, Opened: s.opened, LastActive: s.lastActive, StreamLost: s.streamLost,
		Busy: len(s.calls) > 0, EverStream: gen > 0, StreamOpen: s.outbox.HasStream(),
		Probe: s.currentProbe, CurrentGen: gen,
	}
}

func (s *session) streamOpened() {
	s.mu.Lock()
	s.streamLost = time.Time{}
	s.mu.Unlock()
}

func (s *session) streamClosed(now time.Time) {
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
	s.currentProbe, s.probeID = p, gid // an earlier ping's answer decides nothing now
	s.mu.Unlock()
	ping := &jsonrpc.Message{ID: json.RawMessage(strconv.Quote(gid)), Method: "ping"}
	s.outbox.NoteDropped(s.log, s.outbox.Push(ping.Encode()))
}
