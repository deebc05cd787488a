package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/worker"
)

// owner is who a session belongs to: a request on it with anyone else's token meets 404.
type owner struct{ issuer, subject string }

func ownerOf(p auth.Principal) owner { return owner{p.Issuer, p.Subject} }

// Session is one client session and its worker.
type Session struct {
	id         string
	owner      owner
	user       string
	access     policy.Access // decided at initialize; a request can narrow it, never widen it
	version    string        // the protocol version the worker negotiated
	proc       *worker.Process
	credExpiry time.Time       // when the worker's credential expires; zero for never
	initParams json.RawMessage // the client's initialize params, for a restart
	restartMu  sync.RWMutex    // held by a restart; senders take it shared
	outbox     *Outbox
	log        *slog.Logger
	opened     time.Time

	mu           sync.Mutex
	calls        map[string]*inflight // by the client's raw request id
	progress     map[string]*inflight // by normalised progress token
	toWorker     map[string]json.RawMessage
	probes       map[string]*probe // liveness pings by the id they were sent with
	currentProbe *probe
	hints        map[string]bool // readOnlyHint per tool, learned from tools/list
	lastActive   time.Time       // monotonic: a host suspend does not count as idleness
	streamLost   time.Time       // when the last GET stream ended; zero while one is open or never
	everStream   bool
	ending       bool // the reaper has claimed it; requests meet 404
	closed       bool
	reason       string

	nextOut atomic.Uint64
	done    chan struct{}
}

// inflight is one client request waiting for the worker.
type inflight struct {
	call         *worker.Call // set under Session.mu once the request is written to the worker
	clientID     json.RawMessage
	cancelledBy  string        // the client's reason, once it cancelled; guarded by Session.mu
	wasCancelled bool          // guarded by Session.mu
	events       chan []byte   // messages related to this request, for its SSE response
	cancelled    chan struct{} // closed when the client cancels the request
	canStream    bool
	progress     string // normalised progress token; "" when the request has none
	cancel       sync.Once
}

const inflightEvents = 256

// maxWorkerRequests bounds the worker's requests (elicitation, sampling, roots) that wait for
// the client's answer; beyond it the worker is answered with an error at once.
const maxWorkerRequests = 64

func newSessionID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("gateway: no randomness for a session id: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

func (s *Session) ID() string { return s.id }

// touch records client activity. It reports false for a session the reaper has already
// decided to end: the request must then meet 404, as it would a moment later.
func (s *Session) touch(now time.Time) bool {
	s.mu.Lock()
	if s.ending || s.closed {
		s.mu.Unlock()
		return false
	}
	s.lastActive = now
	s.streamLost = time.Time{}
	s.currentProbe = nil
	clear(s.probes) // answers to them decide nothing now; without this they pile up
	s.mu.Unlock()
	return true
}

// markEnding claims the session for the reaper if nothing changed since the state st was
// read: no request, no call, no new stream in between. A verdict drawn from a snapshot must
// not end a session that a request has since revived.
func (s *Session) markEnding(st sessionState) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ending || s.closed || len(s.calls) > 0 || !s.lastActive.Equal(st.lastActive) || !s.streamLost.Equal(st.streamLost) {
		return false
	}
	if st.streamOpen != s.outbox.HasStream() {
		return false
	}
	s.ending = true
	return true
}

// startCall registers a client request; a second request with an id still in flight is
// refused (errDuplicateID), and so is any request on a session that is ending (errEnding).
// With max > 0, a request beyond max calls in flight is refused (errTooManyCalls).
//
// progressToken is the request's params._meta.progressToken as readClientFields read it.
func (s *Session) startCall(id json.RawMessage, progressToken json.RawMessage, canStream bool, max int) (*inflight, error) {
	inf := &inflight{clientID: id, events: make(chan []byte, inflightEvents), cancelled: make(chan struct{}), canStream: canStream}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ending || s.closed {
		return nil, errEnding
	}
	key := string(id)
	if _, dup := s.calls[key]; dup {
		return nil, errDuplicateID
	}
	if max > 0 && len(s.calls) >= max {
		return nil, errTooManyCalls
	}
	s.calls[key] = inf
	if tok, ok := normaliseToken(progressToken); ok {
		inf.progress = tok
		s.progress[tok] = inf
	}
	return inf, nil
}

var (
	errEnding       = errors.New("session is ending")
	errDuplicateID  = errors.New("a request with this id is already in flight")
	errTooManyCalls = errors.New("too many calls in flight on this session")
)

func (s *Session) endCall(inf *inflight) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls[string(inf.clientID)] == inf {
		delete(s.calls, string(inf.clientID))
	}
	if inf.progress != "" && s.progress[inf.progress] == inf {
		delete(s.progress, inf.progress)
	}
	s.lastActive = time.Now()
}

func (s *Session) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls) > 0
}

// cancelCall handles notifications/cancelled from the client: the worker is told with its own
// id, and the request's POST ends with 202 and no answer.
func (s *Session) cancelCall(requestID json.RawMessage, reason string) bool {
	s.mu.Lock()
	inf := s.calls[string(requestID)]
	var call *worker.Call
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

// setCall records the worker call of a request. A cancel that arrived while the request was
// being written is passed on now.
func (s *Session) setCall(inf *inflight, call *worker.Call) {
	s.mu.Lock()
	inf.call = call
	cancelled, reason := inf.wasCancelled, inf.cancelledBy
	s.mu.Unlock()
	if cancelled {
		call.Cancel(reason)
	}
}

// onWorkerMessage routes what the worker sends on its own. Progress goes to the request that
// asked for it; a log line goes to the one request in flight, if there is exactly one; the
// worker's requests get an id of the gateway's toward the client; everything else waits in
// the outbox for the session's GET stream.
func (s *Session) onWorkerMessage(m *jsonrpc.Message) {
	if m.IsRequest() {
		out := *m
		gid := "gemgate-" + strconv.FormatUint(s.nextOut.Add(1), 10)
		out.ID = json.RawMessage(strconv.Quote(gid))
		s.mu.Lock()
		if len(s.toWorker) >= maxWorkerRequests {
			s.mu.Unlock()
			// The client is not answering; refuse rather than remember without end. The answer
			// is written off the reading goroutine, which must never wait on the worker's stdin.
			s.log.Warn("worker has too many requests unanswered by the client; refused", "method", m.Method)
			refusal := jsonrpc.ErrorResponse(m.ID, jsonrpc.CodeInternalError, "too many requests to the client are unanswered", nil)
			go func() {
				s.restartMu.RLock()
				defer s.restartMu.RUnlock()
				_ = s.worker().Reply(refusal)
			}()
			return
		}
		s.toWorker[gid] = m.ID
		target := s.soleStreamableCallLocked(!s.outbox.HasStream())
		s.mu.Unlock()
		s.deliver(target, out.Encode())
		return
	}
	var target *inflight
	s.mu.Lock()
	switch m.Method {
	case "notifications/progress":
		if tok, ok := progressTokenOf(m.Params); ok {
			target = s.progress[tok]
		}
	case "notifications/message":
		target = s.soleStreamableCallLocked(true)
	}
	s.mu.Unlock()
	s.deliver(target, m.Encode())
}

// soleStreamableCallLocked is the one request in flight that can take an SSE answer, if want
// and there is exactly one.
func (s *Session) soleStreamableCallLocked(want bool) *inflight {
	if !want || len(s.calls) != 1 {
		return nil
	}
	for _, inf := range s.calls {
		if inf.canStream {
			return inf
		}
	}
	return nil
}

func (s *Session) deliver(inf *inflight, msg []byte) {
	if inf != nil && inf.canStream {
		select {
		case inf.events <- msg:
			return
		default:
			s.outbox.Moved(s.log)
		}
	}
	s.outbox.NoteDropped(s.log, s.outbox.Push(msg))
}

// isProbeAnswer reports whether m answers one of the gateway's liveness probes. Such an
// answer proves the client is there but is not activity: it must not refresh the idle clock.
func (s *Session) isProbeAnswer(m *jsonrpc.Message) bool {
	var gid string
	if !m.IsResponse() || json.Unmarshal(m.ID, &gid) != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.probes[gid] != nil
}

// clientResponse routes a response the client POSTed: to the worker request it answers, with
// the worker's id restored, or to a liveness probe of the gateway's.
func (s *Session) clientResponse(m *jsonrpc.Message) {
	var gid string
	if err := json.Unmarshal(m.ID, &gid); err != nil {
		s.log.Debug("client answered an id the gateway never sent", "id", string(m.ID))
		return
	}
	s.mu.Lock()
	workerID, toWorker := s.toWorker[gid]
	delete(s.toWorker, gid)
	pr := s.probes[gid]
	delete(s.probes, gid)
	s.mu.Unlock()
	switch {
	case toWorker:
		out := *m
		out.ID = workerID
		s.restartMu.RLock()
		err := s.worker().Reply(&out)
		s.restartMu.RUnlock()
		if err != nil {
			s.log.Warn("could not pass the client's answer to the worker", "error", err)
		}
	case pr != nil:
		pr.answer(time.Now())
	default:
		s.log.Debug("client answered an unknown or expired request", "id", gid)
	}
}

// progressTokenOf reads params.progressToken from a worker's progress notification, as
// strictly as the client's token was read: an ambiguous one routes nowhere.
func progressTokenOf(params json.RawMessage) (string, bool) {
	p, err := jsonrpc.ReadObject(params, "params")
	if err != nil || p.Exact("progressToken") != nil {
		return "", false
	}
	raw, _ := p.Raw("progressToken")
	return normaliseToken(raw)
}

// normaliseToken gives a token one spelling, since a worker may re-encode a number (1.0 as 1).
func normaliseToken(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s:" + s, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return "", false
	}
	return "n:" + strconv.FormatFloat(f, 'g', -1, 64), true
}
