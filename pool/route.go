package pool

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/worker"
)

// maxWorkerRequests bounds a worker's requests (elicitation, sampling, roots) that wait for a
// caller's answer; beyond it the worker is answered with an error at once.
const maxWorkerRequests = 64

// pendingRequest is a worker request out to one caller.
type pendingRequest struct {
	m        *Member
	workerID json.RawMessage
	method   string // the worker's method, for the audit line of the answer
}

// ErrNotEntitled refuses a read-only token's answer to a read-write worker's request. The
// request stays open for a caller that is entitled.
var ErrNotEntitled = errors.New("a read-only token may not answer a read-write worker's request")

// ErrNoSuchRequest is an answer to a worker request that was not delivered to the caller, or
// was answered or withdrawn since.
var ErrNoSuchRequest = errors.New("no such worker request is waiting for this caller")

// asks reports whether a call of method may carry a worker's request to the client. MCP
// allows it only during tools/call, prompts/get, resources/read and completion/complete.
func asks(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read", "completion/complete":
		return true
	}
	return false
}

// maxAbandoned bounds the cancelled calls a worker has not answered yet. Past it gemgate loses
// track, and from then on no request of the worker belongs to any call, since an untracked
// call might have asked.
const maxAbandoned = 1024

// askerLocked finds the call that a request the worker sends now belongs to: the one written
// call that can ask, counting abandoned ones (then abandoned is true). With several such
// calls the request is ambiguous and belongs to none of them. Then of is their caller if they
// all share one, and nil if they are several callers' or gemgate lost track (maxAbandoned).
func (w *wrk) askerLocked() (owner *Call, abandoned, ambiguous bool, of *Member) {
	if w.lostTrack {
		return nil, false, true, nil
	}
	n, mixed := 0, false
	note := func(c *Call) {
		if n > 0 && c.m != owner.m {
			mixed = true
		}
		owner, n = c, n+1
	}
	for c := range w.calls {
		if c.written && asks(c.out.Method) {
			note(c)
		}
	}
	for c := range w.abandoned {
		note(c)
		abandoned = n == 1
	}
	switch {
	case n == 0:
		return nil, false, false, nil
	case n == 1:
		return owner, abandoned, false, nil
	case mixed:
		return nil, false, true, nil
	}
	return nil, false, true, owner.m
}

// keepAbandonedLocked keeps a cancelled call that the worker still runs, so that askerLocked
// counts it until the worker answers it or ends. Only calls that can ask are kept.
func (w *wrk) keepAbandonedLocked(c *Call, pc *worker.Call) {
	if !asks(c.out.Method) {
		pc.Withdraw("", false) // it asks nothing: its answer, if any, is dropped
		return
	}
	if len(w.abandoned) >= maxAbandoned {
		if !w.lostTrack {
			w.lostTrack = true
			w.log.Warn("worker leaves too many cancelled calls unanswered; from now on none of its requests to the client is taken as a call's", "abandoned", len(w.abandoned))
		}
		pc.Withdraw("", false)
		return
	}
	if w.abandoned == nil {
		w.abandoned = map[*Call]struct{}{}
	}
	w.abandoned[c] = struct{}{}
	if c.msg == &c.out {
		c.out.Params = nil
	}
}

// onMessage routes what the worker sends on its own. It runs on the worker's reading
// goroutine: it never writes to the worker itself, and callers' Deliver must not block.
func (s *slot) onMessage(w *wrk, msg *jsonrpc.Message) {
	if msg.IsRequest() {
		s.workerRequest(w, msg)
		return
	}
	type target struct {
		m    *Member
		call *Call
	}
	var out []target
	body := msg
	s.mu.Lock()
	switch {
	case msg.Method == "notifications/progress":
		tok, ok := workerToken(msg.Params)
		if c := w.progress[tok]; ok && c != nil {
			if params, err := restoreProgress(msg.Params, c.token); err == nil {
				restored := *msg
				restored.Params = params
				body = &restored
				out = append(out, target{c.m, c})
			}
		}
	case msg.Method == "notifications/message":
		level := levelOf(msg.Params)
		for m := range s.members {
			if want, set := w.levels[m]; set && level < want {
				continue
			}
			out = append(out, target{m, w.soleCallLocked(m)})
		}
	case msg.Method == "notifications/resources/updated":
		uri, _ := uriOf(msg.Params) // "" when unreadable: then it reaches no subscriber
		for m := range w.subs[uri] {
			if _, in := s.members[m]; in {
				out = append(out, target{m, nil})
			}
		}
	default: // list_changed and whatever else: every caller of this worker (one user's)
		for m := range s.members {
			out = append(out, target{m, nil})
		}
	}
	s.mu.Unlock()
	if len(out) == 0 {
		return
	}
	enc := body.Encode()
	for _, t := range out {
		t.m.c.Deliver(Delivery{Message: enc, Call: t.call})
	}
}

// soleCallLocked is m's call at the worker if it is m's only one there.
func (w *wrk) soleCallLocked(m *Member) *Call {
	var sole *Call
	for c := range w.calls {
		if c.m == m {
			if sole != nil {
				return nil
			}
			sole = c
		}
	}
	return sole
}

// workerRequest sends a worker's request to the one caller entitled to answer it. Otherwise
// gemgate answers with the safe refusal (unanswerable) and logs why:
//
//   - A request that belongs to a call goes to that call's stream, if the caller declared the
//     capability. A read-only token is never asked for a read-write worker, and a cancelled
//     call is asked nothing.
//   - An ambiguous request goes to the session stream of the caller that owns all the
//     candidate calls. If they are several callers', nobody is asked: each could be the wrong
//     client.
//   - A request outside any call goes to the most recently active legacy session that
//     declared the capability and has a stream. A 2026-07-28 request has no stream outside
//     its own call.
func (s *slot) workerRequest(w *wrk, msg *jsonrpc.Message) {
	s.mu.Lock()
	if len(w.requests) >= maxWorkerRequests {
		w.proc.LogQuoting(slog.LevelWarn, "worker has too many requests unanswered by the clients; refused", "method", []byte(msg.Method))
		s.refuseLocked(w, jsonrpc.ErrorResponse(msg.ID, jsonrpc.CodeMethodNotFound, "too many requests to the client are unanswered", nil))
		s.mu.Unlock()
		return
	}
	var to *Member
	var call *Call
	why := ""
	switch owner, abandoned, ambiguous, of := w.askerLocked(); {
	case ambiguous && of == nil:
		why = "calls of several clients at the worker could have asked; gemgate does not guess which"
	case ambiguous:
		// All candidate calls are this caller's: its session stream may take the request,
		// but none of the calls' streams.
		if _, in := s.members[of]; in && of.caps.allows(msg.Method) && (of.c.CanTakeRequest() || s.p.PerSession()) {
			to = of
		} else {
			why = "the calls that could have asked are one client's, whose session cannot take the request now"
		}
	case owner == nil:
	case abandoned:
		why = "the call that asked was given up by its client"
	case owner.readOnly && !w.readOnly:
		why = "the call that asked was made with a read-only token, which may not answer a read-write worker"
	case owner.m.caps.allows(msg.Method):
		to, call = owner.m, owner
	}
	members := make([]*Member, 0, len(s.members))
	for m := range s.members {
		members = append(members, m)
	}
	s.mu.Unlock()
	if to == nil && why == "" && s.p.PerSession() && len(members) == 1 {
		to = members[0] // its own worker: it gets the request on its stream whenever it opens one
	}
	if to == nil && why == "" {
		var best *Member
		for _, m := range members {
			if !m.caps.allows(msg.Method) || !m.c.CanTakeRequest() {
				continue
			}
			if best == nil || m.c.LastActive().After(best.c.LastActive()) {
				best = m
			}
		}
		to = best
	}
	if to == nil {
		if why == "" {
			why = "no session can answer the worker's request"
		}
		answer, named := unanswerable(msg)
		w.proc.LogQuoting(slog.LevelInfo, "audit worker request", "method", []byte(msg.Method),
			"answered_by", "gemgate", "answer", named, "reason", why, "worker_read_only", w.readOnly)
		s.mu.Lock()
		s.refuseLocked(w, answer)
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	if s.w != w {
		s.mu.Unlock()
		return
	}
	gid := "gemgate-w" + strconv.FormatUint(s.p.nextReq.Add(1), 10)
	w.requests[gid] = pendingRequest{m: to, workerID: msg.ID, method: msg.Method}
	s.mu.Unlock()
	out := *msg
	out.ID = json.RawMessage(strconv.Quote(gid))
	to.c.Deliver(Delivery{Message: out.Encode(), Call: call, Request: true})
}

// maxRefusals bounds the answers gemgate has decided for a worker's requests and not yet
// written: they wait only while the worker does not read its input, which write_timeout ends.
const maxRefusals = 64

// refuseLocked queues gemgate's answer to a worker's request. One goroutine per worker writes
// the queue, never the reading goroutine, which must not wait on the worker's stdin. Past
// maxRefusals answers are dropped; write_timeout stops a worker that does not read.
func (s *slot) refuseLocked(w *wrk, answer *jsonrpc.Message) {
	if len(w.refusals) >= maxRefusals {
		if !w.dropped {
			w.dropped = true
			w.log.Warn("worker sends requests faster than it reads their answers; answers dropped", "queued", len(w.refusals))
		}
		return
	}
	w.refusals = append(w.refusals, answer)
	if !w.refusing {
		w.refusing = true
		go s.writeRefusals(w)
	}
}

// writeRefusals writes the worker's queued refusals until none is left.
func (s *slot) writeRefusals(w *wrk) {
	for {
		s.mu.Lock()
		if len(w.refusals) == 0 {
			w.refusing = false
			w.refusals = nil
			s.mu.Unlock()
			return
		}
		m := w.refusals[0]
		w.refusals[0] = nil
		w.refusals = w.refusals[1:]
		s.mu.Unlock()
		_ = w.proc.Reply(context.Background(), m)
	}
}

// unanswerable is gemgate's answer to a worker's request that no entitled client can take.
// It fails safe, as if the user had been asked and had not agreed: an elicitation is
// cancelled (a confirmation never shown confirms nothing), roots are none, and anything else
// is an error. named is what the audit line calls the answer.
func unanswerable(msg *jsonrpc.Message) (answer *jsonrpc.Message, named string) {
	switch msg.Method {
	case "elicitation/create":
		return &jsonrpc.Message{ID: msg.ID, Result: json.RawMessage(`{"action":"cancel"}`)}, "cancel"
	case "roots/list":
		return &jsonrpc.Message{ID: msg.ID, Result: json.RawMessage(`{"roots":[]}`)}, "no roots"
	}
	return jsonrpc.ErrorResponse(msg.ID, jsonrpc.CodeMethodNotFound, "no client session can answer "+msg.Method+" now", nil), "error"
}

// shareLocked handles the requests whose effect is shared by every caller of a worker:
// resources/subscribe and unsubscribe are reference counted, logging/setLevel sets the
// worker to the most verbose level any caller asked for. It returns an answer when the worker
// need not be asked, and otherwise prepares the call (c.msg, c.after).
func (s *slot) shareLocked(c *Call) *jsonrpc.Message {
	w, m := c.w, c.m
	ok := func() *jsonrpc.Message { return &jsonrpc.Message{ID: c.clientID, Result: json.RawMessage(`{}`)} }
	switch c.msg.Method {
	case "resources/subscribe", "resources/unsubscribe":
		// The count is keyed by the URI as gemgate reads it. A URI the worker might read
		// differently is refused, or two callers asking for different things would share one
		// count.
		uri, readable := uriOf(c.msg.Params)
		if !readable {
			return jsonrpc.ErrorResponse(c.clientID, jsonrpc.CodeInvalidParams, c.msg.Method+" needs params.uri, a string", nil)
		}
		if c.msg.Method == "resources/unsubscribe" {
			if !w.dropSubLocked(uri, m) {
				return ok()
			}
			c.subURI, c.subFwd = uri, true
			return nil
		}
		subs := w.subs[uri]
		if !subs[m] && w.subsOf[m] >= MaxSubscriptionsPerCaller {
			return jsonrpc.ErrorResponse(c.clientID, jsonrpc.CodeInvalidParams, tooManySubscriptions, nil)
		}
		taken := len(subs) > 0 && w.subPend[uri] == 0
		w.addSubLocked(uri, m)
		if taken {
			return ok() // the worker took this URI, and nothing about it is in flight
		}
		// New URI, or an earlier subscribe is unanswered: forward this one too, so that the
		// caller gets the worker's own answer. The caller counts meanwhile, so that the
		// worker is not unsubscribed under it.
		w.pendLocked(uri, m, 1)
		c.subURI, c.subFwd = uri, true
		c.after = func(answer *jsonrpc.Message) { w.subscribedLocked(c, uri, answer) }
	case "logging/setLevel":
		level, name := levelOf(c.msg.Params), levelName(c.msg.Params)
		if name == "" {
			return nil // the worker answers a malformed one
		}
		w.levels[m] = level
		most := w.mostVerboseLocked()
		if w.level >= 0 && most == w.level {
			return ok()
		}
		w.level = most
		out := *c.msg
		out.Params = levelParams(most)
		c.msg = &out
	}
	return nil
}

// subKey is a caller's subscription to a URI; a nil caller is gemgate's own (reconcile).
type subKey struct {
	uri string
	m   *Member
}

// pendLocked counts a subscribe of uri by m (nil: reconcile's own) in flight (delta 1) or
// ended (-1); a count that reaches zero is dropped.
func (w *wrk) pendLocked(uri string, m *Member, delta int) {
	add(w.subPend, uri, delta)
	add(w.subPendOf, subKey{uri, m}, delta)
}

// add adds delta to m[k], and drops the entry once it is not positive.
func add[K comparable](m map[K]int, k K, delta int) {
	if m[k] += delta; m[k] <= 0 {
		delete(m, k)
	}
}

// subscribedLocked settles a forwarded subscribe with the worker's answer (nil if given up).
// If refused or given up, the caller stops counting unless another subscribe of its is in
// flight. reconcile runs after.
func (w *wrk) subscribedLocked(c *Call, uri string, answer *jsonrpc.Message) {
	w.pendLocked(uri, c.m, -1)
	refused := answer != nil && answer.Error != nil
	if answer != nil && !refused {
		return
	}
	if w.subPendOf[subKey{uri, c.m}] == 0 {
		w.dropSubLocked(uri, c.m)
	}
	// Refused as the last line about uri: remember nothing, so that refused subscribes to
	// client-chosen URIs leave nothing behind.
	if refused && w.told[uri] == c {
		delete(w.told, uri)
	}
}

// setToldLocked records the subscription line by (the call's, or the stand-in of reconcile's
// own subscribe) as the last one written of uri; nil is an unsubscribe.
func (w *wrk) setToldLocked(uri string, by *Call) {
	if by != nil {
		w.told[uri] = by
	} else {
		delete(w.told, uri)
	}
}

// reconcile writes a subscribe or unsubscribe of uri when the worker's last line about it
// disagrees with whether any caller counts. A refusal of its own subscribe uncounts the
// callers that relied on it.
func (w *wrk) reconcile(s *slot, uri string) {
	w.subMu.Lock()
	defer w.subMu.Unlock()
	s.mu.Lock()
	want := len(w.subs[uri]) > 0
	if want == (w.told[uri] != nil) || want && w.subscribingLocked(uri) {
		s.mu.Unlock()
		return
	}
	var mark *Call // stands for this subscribe in told: its answer is known for its own
	method := "resources/unsubscribe"
	if want {
		mark, method = new(Call), "resources/subscribe"
		w.pendLocked(uri, nil, 1)
	}
	w.setToldLocked(uri, mark)
	s.mu.Unlock()
	id, _ := json.Marshal("gemgate-" + method[len("resources/"):])
	msg := &jsonrpc.Message{ID: id, Method: method, Params: w.ownParams(uriParams(uri))}
	if !want {
		if c, err := w.proc.Send(context.Background(), msg, nil); err == nil {
			c.Abandon()
		}
		return
	}
	// Runs on the worker's reader or waiter: bookkeeping only, no write. An error from a
	// dying worker uncounts nobody: the subscriptions carry over to its successor.
	if _, err := w.proc.Send(context.Background(), msg, worker.RecipientFunc(func(resp *jsonrpc.Message) {
		refused := resp.Error != nil && !w.proc.Closing()
		s.mu.Lock()
		w.reconciledLocked(uri, mark, refused)
		s.mu.Unlock()
	})); err != nil {
		s.mu.Lock()
		w.reconciledLocked(uri, mark, false)
		s.mu.Unlock()
	}
}

// subscribingLocked reports whether a caller's subscribe of uri is decided and not yet
// written. Its own write tells the worker, and reconciles after it.
func (w *wrk) subscribingLocked(uri string) bool {
	subscribes := func(c *Call) bool { return c.subFwd && c.subURI == uri && c.msg.Method == "resources/subscribe" }
	for c := range w.calls {
		if !c.written && subscribes(c) {
			return true
		}
	}
	for _, line := range w.queue.lines {
		if slices.ContainsFunc(line, subscribes) {
			return true
		}
	}
	return false
}

// reconciledLocked settles reconcile's own subscribe of uri. If refused, the callers that
// relied on it count no more.
func (w *wrk) reconciledLocked(uri string, mark *Call, refused bool) {
	w.pendLocked(uri, nil, -1)
	if !refused || w.told[uri] != mark {
		return
	}
	delete(w.told, uri)
	for m := range w.subs[uri] {
		if w.subPendOf[subKey{uri, m}] == 0 {
			w.dropSubLocked(uri, m)
		}
	}
}

// releaseLocked drops m's subscriptions and level; it returns the URIs nobody wants now.
func (w *wrk) releaseLocked(m *Member) []string {
	delete(w.levels, m)
	var unsub []string
	for uri, subs := range w.subs {
		if subs[m] && w.dropSubLocked(uri, m) {
			unsub = append(unsub, uri)
		}
	}
	return unsub
}

// MaxSubscriptionsPerCaller bounds the resource URIs one caller (a session) may be subscribed
// to at a worker: the URIs are the client's choice, and gemgate keeps each.
const MaxSubscriptionsPerCaller = 1000

var tooManySubscriptions = "too many resource subscriptions in this session (at most " +
	strconv.Itoa(MaxSubscriptionsPerCaller) + "): unsubscribe from one first"

// addSubLocked counts m as subscribed to uri.
func (w *wrk) addSubLocked(uri string, m *Member) {
	subs := w.subs[uri]
	if subs == nil {
		subs = map[*Member]bool{}
		w.subs[uri] = subs
	}
	if !subs[m] {
		subs[m] = true
		w.subsOf[m]++
	}
}

// dropSubLocked counts m as subscribed to uri no more; it reports whether nobody is.
func (w *wrk) dropSubLocked(uri string, m *Member) (none bool) {
	subs := w.subs[uri]
	if subs[m] {
		delete(subs, m)
		add(w.subsOf, m, -1)
	}
	if len(subs) > 0 {
		return false
	}
	delete(w.subs, uri)
	return true
}

// carryLocked gives w, a worker just started in the slot, its callers' subscriptions and
// logging levels from the previous worker, since the callers were told of no change. It
// returns the URIs for tellCarried.
func (s *slot) carryLocked(w *wrk) []string {
	prev := s.prev
	s.prev = nil
	if prev == nil {
		return nil
	}
	var uris []string
	for m := range s.members {
		held, level := prev.heldLocked(m, true)
		w.takeOverLocked(m, held, level)
	}
	for uri := range w.subs {
		uris = append(uris, uri)
	}
	return uris
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
	if c, err := w.proc.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`"gemgate-setLevel"`), Method: "logging/setLevel", Params: w.ownParams(levelParams(most))}, nil); err == nil {
		c.Abandon()
	}
}

// heldLocked is what m asked of w that survives a move: its subscribed URIs and its logging
// level (-1 if none). At a running worker, unanswered subscribes are included; a later
// refusal follows m (unfollowSub).
func (w *wrk) heldLocked(m *Member, settled bool) (uris []string, level int) {
	for uri, subs := range w.subs {
		if subs[m] && !(settled && w.subPendOf[subKey{uri, m}] > 0) {
			uris = append(uris, uri)
		}
	}
	level, set := w.levels[m]
	if !set {
		level = -1
	}
	return uris, level
}

// unfollowSub uncounts m for uri at its new worker, after its old worker refused the
// subscribe that came along with the move.
func (m *Member) unfollowSub(from *slot, uri string) {
	s := m.slot()
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

// takeOverLocked gives w what m held at the worker it moved from (heldLocked); tellCarried
// then tells w.
func (w *wrk) takeOverLocked(m *Member, uris []string, level int) {
	for _, uri := range uris {
		w.addSubLocked(uri, m)
	}
	if level >= 0 {
		w.levels[m] = level
	}
}

// mostVerboseLocked is the most verbose level any caller of w asked for; -1 when none did.
func (w *wrk) mostVerboseLocked() int {
	most := -1
	for _, l := range w.levels {
		if most < 0 || l < most {
			most = l
		}
	}
	return most
}

// levelParams are logging/setLevel's params for a level.
func levelParams(level int) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"level": levelNames[level]})
	return b
}

// The syslog levels of MCP logging, most verbose first.
var levelNames = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

func levelName(params json.RawMessage) string {
	p, err := jsonrpc.ReadObject(params, "params")
	if err != nil || p.Exact("level") != nil {
		return ""
	}
	name, _, err := p.String("level")
	if err != nil {
		return ""
	}
	for _, n := range levelNames {
		if n == name {
			return name
		}
	}
	return ""
}

// levelOf is the rank of params.level; an unknown level counts as the most severe, so that
// no caller misses it.
func levelOf(params json.RawMessage) int {
	name := levelName(params)
	for i, n := range levelNames {
		if n == name {
			return i
		}
	}
	return len(levelNames) - 1
}

// uriOf is params.uri, read strictly; ok is false when params are not an object with a
// string uri, spelled exactly, once.
func uriOf(params json.RawMessage) (uri string, ok bool) {
	p, err := jsonrpc.ReadObject(params, "params")
	if err != nil || p.Exact("uri") != nil {
		return "", false
	}
	uri, present, err := p.String("uri")
	return uri, present && err == nil
}

// ownParams are the params of a request of gemgate's own to w: with the _meta of the
// sessionless revision when gemgate's session with w is one of it.
func (w *wrk) ownParams(params json.RawMessage) json.RawMessage {
	if w.openedSessionless {
		return sessionlessParams(params)
	}
	return params
}

func uriParams(uri string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"uri": uri})
	return b
}

// workerToken reads params.progressToken of a worker's progress notification as strictly as
// the client's was read: an ambiguous one routes nowhere.
func workerToken(params json.RawMessage) (string, bool) {
	p, err := jsonrpc.ReadObject(params, "params")
	if err != nil || p.Exact("progressToken") != nil {
		return "", false
	}
	tok, ok, err := p.String("progressToken")
	if err != nil || !ok || !strings.HasPrefix(tok, "gemgate-p") {
		return "", false
	}
	return tok, true
}

// restoreProgress puts the client's own progress token back.
func restoreProgress(params, token json.RawMessage) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	p["progressToken"] = token
	return json.Marshal(p)
}
