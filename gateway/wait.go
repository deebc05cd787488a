package gateway

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/telemetry"
)

// waiting is a forwarded call waiting for its answer; eras differ by waitEra and nil channels.
type waiting struct {
	g      *Gateway
	era    waitEra
	call   *pool.Call
	id     json.RawMessage // the client's request id
	method string
	access policy.Access
	log    *slog.Logger
	member *pool.Member
	events *wire.EventQueue // what the worker sends about the call before its answer
	out    *answerWriter
	span   trace.Span   // the round trip to the worker; nil for a bridge retry (run)
	audit  *slog.Logger // a tools/call's audit line's, of tool
	tool   string

	cancelled <-chan struct{}         // 2025-x: the client's notifications/cancelled
	ended     <-chan struct{}         // 2025-x: the session ended (CheckResponsive)
	requests  <-chan *jsonrpc.Message // 2026-07-28: the worker's questions, for the bridge
	detached  <-chan struct{}         // 2026-07-28: the worker let go of the call
	gone      <-chan struct{}         // the client's request ended; nil once the call is orphaned
	orphaned  *time.Ticker            // runs once a resumable stream's connection is lost
	lost      time.Time
}

// waitEra is what waiting does differently by era: pending (2025-x), *sessionless.Wait.
type waitEra interface {
	// Answer makes the filtered answer the client's; its audit outcome, "" for callOutcome's.
	Answer(resp *jsonrpc.Message, hints map[string]policy.Hints) (*jsonrpc.Message, string)
	// ErrorStatus is the status of an error answer before a stream began; 0: as any answer.
	ErrorStatus(resp *jsonrpc.Message) int
	// Park parks the call on a worker's question (the bridge); false when it goes on.
	Park(req *jsonrpc.Message) (*jsonrpc.Message, bool)
	// ClientGone is the cancel reason and audit outcome when the client's request ended.
	ClientGone() (reason, outcome string)
}

// run waits for the call's answer, writes it, and ends the call for both eras: the round trip's
// span (a bridge retry has none: the round that parked the call ended it), the request's
// outcome, a tools/call's audit line.
func (c *waiting) run(r *http.Request) {
	started := time.Now()
	outcome := c.wait()
	if c.span != nil {
		telemetry.EndRoundTrip(c.span, outcome)
	}
	telemetry.RequestFrom(r.Context()).Outcome(outcome)
	if c.method == "tools/call" {
		c.g.auditCall(r.Context(), c.audit, c.tool, c.access.ReadOnly, outcome, time.Since(started))
	}
}

// wait waits for the call's answer and writes it; it returns the audit outcome.
func (c *waiting) wait() string {
	var timeout <-chan time.Time
	if d := c.g.opts.Lifetime.RequestTimeout; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	defer func() {
		if c.orphaned != nil {
			c.orphaned.Stop()
		}
	}()
	for {
		var orphanCheck <-chan time.Time
		if c.orphaned != nil {
			orphanCheck = c.orphaned.C
		}
		select {
		case resp := <-c.call.Result():
			return c.answer(c.cutByStop(resp))
		case <-c.events.Ready():
			for _, ev := range c.events.Take() {
				if !c.out.event(ev) && !c.orphan("client stream lost") {
					return "disconnected"
				}
			}
		case req := <-c.requests:
			if ans, ok := c.era.Park(req); ok {
				return c.parkAnswer(ans)
			}
		case <-c.cancelled:
			c.out.cancelled()
			return "cancelled"
		case <-c.detached:
			return c.workerGone()
		case <-c.gone:
			if reason, outcome := c.era.ClientGone(); !c.orphan(reason) {
				return outcome
			}
		case <-orphanCheck:
			if c.out.store.Abandoned(c.out.sid, c.lost) { // nobody came back for the answer
				c.call.Cancel("client stream lost and not resumed")
				c.out.finish()
				return "disconnected"
			}
		case <-timeout:
			c.call.Cancel("request timeout")
			c.call.CheckResponsive(c.ended) // a worker that hangs is stopped, in either era
			resp := jsonrpc.ErrorResponse(c.id, jsonrpc.CodeRequestTimeout, "request timed out", map[string]any{"kind": "timeout"})
			c.out.answer(resp, false, http.StatusOK)
			return "timeout"
		}
	}
}

// answer writes the worker's answer after what it queued about the call before it.
func (c *waiting) answer(resp *jsonrpc.Message) string {
	for _, ev := range c.events.Take() {
		c.out.event(ev)
	}
	resp, hints := c.g.filterTools(c.log, c.member, c.method, c.access, resp)
	resp, outcome := c.era.Answer(resp, hints)
	if outcome == "" {
		outcome = callOutcome(c.method, resp)
	}
	asStream, status := c.out.asStream, http.StatusOK
	if resp.Error != nil {
		if s := c.era.ErrorStatus(resp); s != 0 {
			asStream, status = false, s
		}
	}
	c.out.answer(resp, asStream, status)
	return outcome
}

// parkAnswer writes the bridge's answer: input_required, or an error (as answer's status).
func (c *waiting) parkAnswer(ans *jsonrpc.Message) string {
	ans.ID = c.id
	if ans.Error != nil {
		if s := c.era.ErrorStatus(ans); s != 0 {
			c.out.answer(ans, false, s)
			return "error"
		}
	}
	for _, ev := range c.events.Take() { // what the worker reported before it asked is this request's
		c.out.event(ev)
	}
	c.out.answer(ans, c.out.asStream, http.StatusOK)
	return "input_required"
}

// orphan: a lost stream the client can resume keeps the call running; false ends the wait.
func (c *waiting) orphan(reason string) bool {
	if !c.out.primed {
		c.call.Cancel(reason)
		c.out.finish() // a first write cut midway may have given an id to resume from
		return false
	}
	c.out.live = false // later events are only logged
	if c.orphaned == nil {
		c.lost = time.Now()
		c.orphaned = time.NewTicker(wire.ResumeRetention / 4)
	}
	c.gone = nil
	return true
}

// cutByStop is resp, unless it is the worker's exit because Close stopped it: then the stop's
// answer (stoppedCall), which a session's call gets before its worker is stopped (endSession),
// and a 2026-07-28 call when its detach is seen before its worker's exit.
func (c *waiting) cutByStop(resp *jsonrpc.Message) *jsonrpc.Message {
	if resp.Error == nil || !c.g.stopped() || !pool.ExitedUnasked(resp) {
		return resp
	}
	return stoppedCall(c.id)
}

// workerGone answers a call its worker let go of: the answer if it came, else an error,
// never a 503 (stoppedCall).
func (c *waiting) workerGone() string {
	select {
	case resp := <-c.call.Result():
		return c.answer(c.cutByStop(resp))
	default:
	}
	c.call.Cancel("the worker let go of the request")
	resp := jsonrpc.ErrorResponse(c.id, jsonrpc.CodeInternalError, "the worker is gone", map[string]any{"kind": "workerExit"})
	if c.g.closing.Load() {
		resp = stoppedCall(c.id)
	}
	c.out.answer(resp, false, http.StatusOK)
	return "error"
}

// pending is a 2025-x session's waitEra.
type pending struct {
	s   *session
	inf *inflight
}

// await waits for a session's answer and ends the call (run); the id is freed before the
// answer is written (reused at once).
func (g *Gateway) await(w http.ResponseWriter, r *http.Request, s *session, inf *inflight, method string, access policy.Access,
	span trace.Span, audit *slog.Logger, tool string) {
	wt := &waiting{
		g: g, era: &pending{s: s, inf: inf}, call: inf.call, id: inf.clientID, method: method, access: access,
		log: s.log, member: s.member, events: &inf.events,
		out:  g.newAnswerWriter(w, s.id, s.outbox.Store(), inf.canStream),
		span: span, audit: audit, tool: tool,
		cancelled: inf.cancelled, ended: s.done, gone: r.Context().Done(),
	}
	wt.out.prime = s.primes
	wt.run(r)
}

func (c *pending) Answer(resp *jsonrpc.Message, hints map[string]policy.Hints) (*jsonrpc.Message, string) {
	c.s.learnHints(hints, c.inf.hintsEpoch, c.inf.worker)
	c.s.endCall(c.inf)
	return resp, ""
}

func (c *pending) ErrorStatus(*jsonrpc.Message) int               { return 0 }
func (c *pending) Park(*jsonrpc.Message) (*jsonrpc.Message, bool) { return nil, false }
func (c *pending) ClientGone() (reason, outcome string)           { return "client disconnected", "disconnected" }
