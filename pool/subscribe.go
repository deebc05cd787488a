package pool

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/worker"
)

// A worker's callers share its resource subscriptions, counted by URI (wrk.subs). A caller's
// subscribe goes to the worker when nobody counts for the URI, or while an earlier subscribe
// of it is unanswered, so that the caller gets the worker's own answer; the caller counts
// meanwhile, and no more if refused. An unsubscribe goes to the worker when nobody counts any
// more. Since callers race, reconcile then makes the worker's last line of the URI
// (wrk.heard) agree with the count.

// MaxSubscriptionsPerCaller bounds the resource URIs one caller (a session) may be subscribed
// to at a worker: the URIs are the client's choice, and gemgate keeps each.
const MaxSubscriptionsPerCaller = 1000

var tooManySubscriptions = "too many resource subscriptions in this session (at most " +
	strconv.Itoa(MaxSubscriptionsPerCaller) + "): unsubscribe from one first"

// shareLocked handles the requests whose effect every caller of a worker shares. It returns
// an answer when the worker need not be asked, and otherwise prepares the call.
func (s *slot) shareLocked(c *Call) *jsonrpc.Message {
	switch c.out.Method {
	case "resources/subscribe", "resources/unsubscribe":
		return c.w.subscribeLocked(c)
	case "logging/setLevel":
		return c.w.setLevelLocked(c)
	}
	return nil
}

func okAnswer(c *Call) *jsonrpc.Message {
	return &jsonrpc.Message{ID: c.out.ID, Result: json.RawMessage(`{}`)}
}

// subscribeLocked counts a subscribe or unsubscribe by the URI as gemgate reads it. A URI the
// worker might read differently is refused, or two callers asking for different things would
// share one count.
func (w *wrk) subscribeLocked(c *Call) *jsonrpc.Message {
	uri, readable := paramString(c.out.Params, "uri")
	switch {
	case !readable:
		return jsonrpc.ErrorResponse(c.out.ID, jsonrpc.CodeInvalidParams, c.out.Method+" needs params.uri, a string", nil)
	case c.out.Method == "resources/unsubscribe":
		if !w.dropSubLocked(uri, c.m) {
			return okAnswer(c) // others still count
		}
	case !w.subs[uri][c.m] && w.subsOf[c.m] >= MaxSubscriptionsPerCaller:
		return jsonrpc.ErrorResponse(c.out.ID, jsonrpc.CodeInvalidParams, tooManySubscriptions, nil)
	case len(w.subs[uri]) > 0 && len(w.subPending[uri]) == 0:
		w.addSubLocked(uri, c.m)
		return okAnswer(c) // the worker took uri, and nothing about it is in flight
	default:
		w.addSubLocked(uri, c.m)
		w.pendingLocked(uri, c.m, 1)
		c.after = func(answer *jsonrpc.Message) { w.subscribedLocked(c, uri, answer) }
	}
	c.subURI, c.subFwd = uri, true
	return nil
}

// pendingLocked counts a subscribe of uri by m in flight (delta 1) or ended (-1).
func (w *wrk) pendingLocked(uri string, m *Member, delta int) {
	of := w.subPending[uri]
	if of == nil {
		of = map[*Member]int{}
		w.subPending[uri] = of
	}
	if add(of, m, delta); len(of) == 0 {
		delete(w.subPending, uri)
	}
}

// add adds delta to m[k], and drops the entry once it is not positive.
func add[K comparable](m map[K]int, k K, delta int) {
	if m[k] += delta; m[k] <= 0 {
		delete(m, k)
	}
}

// subscribedLocked settles a forwarded subscribe with the worker's answer (nil if given up).
// Refused or given up, the caller stops counting unless another subscribe of its is in
// flight; a refusal that is the worker's last line of uri leaves nothing behind.
func (w *wrk) subscribedLocked(c *Call, uri string, answer *jsonrpc.Message) {
	w.pendingLocked(uri, c.m, -1)
	refused := answer != nil && answer.Error != nil
	if answer != nil && !refused {
		return
	}
	if w.subPending[uri][c.m] == 0 {
		w.dropSubLocked(uri, c.m)
	}
	if refused && w.heard[uri] == c {
		delete(w.heard, uri)
	}
}

// setHeardLocked records the worker's last line of uri: a subscribe by a call (or by the
// stand-in of reconcile's own), or an unsubscribe (nil).
func (w *wrk) setHeardLocked(uri string, by *Call) {
	if by != nil {
		w.heard[uri] = by
	} else {
		delete(w.heard, uri)
	}
}

// beginSubWrite records the line of a forwarded call as the worker's last of its URI before
// it is written, since the answer may be read before the write returns, and marks the call
// written (unwrittenSubLocked). It holds subMu until end, so that heard follows the order the
// worker reads lines in; end puts back what was heard if the line was not written.
func (s *slot) beginSubWrite(c *Call) (end func(written bool)) {
	w, uri, by := c.w, c.subURI, c
	if c.out.Method != "resources/subscribe" {
		by = nil
	}
	w.subMu.Lock()
	s.mu.Lock()
	was := w.heard[uri]
	w.setHeardLocked(uri, by)
	c.written = true
	s.mu.Unlock()
	return func(written bool) {
		if !written {
			s.mu.Lock()
			w.setHeardLocked(uri, was)
			s.mu.Unlock()
		}
		w.subMu.Unlock()
	}
}

// reconcileSub reconciles the URI of a forwarded call, once its bookkeeping is done.
func (s *slot) reconcileSub(c *Call) {
	if c.subFwd {
		c.w.reconcile(s, c.subURI)
	}
}

// reconcile writes a subscribe or unsubscribe of uri when the worker's last line of it
// disagrees with the count, unless a caller's subscribe is on its way (unwrittenSubLocked).
// If the worker refuses its own subscribe, the callers that relied on it count no more.
func (w *wrk) reconcile(s *slot, uri string) {
	w.subMu.Lock()
	defer w.subMu.Unlock()
	s.mu.Lock()
	want := len(w.subs[uri]) > 0
	if want == (w.heard[uri] != nil) || want && w.unwrittenSubLocked(uri) {
		s.mu.Unlock()
		return
	}
	method, mark := "unsubscribe", (*Call)(nil)
	if want {
		method, mark = "subscribe", new(Call) // mark stands for this subscribe in heard
		w.pendingLocked(uri, nil, 1)
	}
	w.setHeardLocked(uri, mark)
	s.mu.Unlock()
	msg := &jsonrpc.Message{ID: json.RawMessage(`"gemgate-` + method + `"`), Method: "resources/" + method,
		Params: s.ownParams(stringParams("uri", uri))}
	if !want {
		if c, err := w.proc.Send(context.Background(), msg, nil); err == nil {
			c.Abandon()
		}
		return
	}
	// On the worker's reader or waiter: bookkeeping only. A dying worker's error uncounts
	// nobody, since the subscriptions carry over to its successor.
	settle := func(refused bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		w.pendingLocked(uri, nil, -1)
		if !refused || w.heard[uri] != mark {
			return
		}
		delete(w.heard, uri)
		for m := range w.subs[uri] {
			if w.subPending[uri][m] == 0 {
				w.dropSubLocked(uri, m)
			}
		}
	}
	if _, err := w.proc.Send(context.Background(), msg, worker.RecipientFunc(func(resp *jsonrpc.Message) {
		settle(resp.Error != nil && !w.proc.Closing())
	})); err != nil {
		settle(false)
	}
}

// unwrittenSubLocked reports whether a caller's subscribe of uri is decided and not yet
// written. Its own write tells the worker, and reconciles after it.
func (w *wrk) unwrittenSubLocked(uri string) bool {
	subscribes := func(c *Call) bool { return c.subFwd && c.subURI == uri && c.out.Method == "resources/subscribe" }
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
