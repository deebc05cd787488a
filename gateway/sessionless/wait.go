package sessionless

import (
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// Wait is a 2026-07-28 call as the core's one wait loop waits for it (Steps.Await): what it
// waits on, and, in its methods (the core's waitEra), what the era does differently. Closing
// the response stream cancels the call at the worker; an error the spec maps to an HTTP status
// goes as JSON with that status while no stream has begun; a legacy worker's question parks
// the call (bridge.go).
type Wait struct {
	Call     *pool.Call
	ID       json.RawMessage // the client's request id
	Method   string
	Access   policy.Access
	Member   *pool.Member
	Events   *wire.EventQueue        // what the worker sends about the call before its answer
	Requests <-chan *jsonrpc.Message // the worker's questions, for the bridge
	Detached <-chan struct{}         // the worker let go of the call
	// Span, the round trip to the worker, the core ends with the call (nil for a bridge retry:
	// the round that parked it did); Log is a tools/call's audit logger, of Tool.
	Span trace.Span
	Log  *slog.Logger
	Tool string

	a      *Adapter
	pk     *parked
	again  map[string]*jsonrpc.Message // a retry's unanswered questions, parked with the next
	parked bool                        // the call waits for the client's retry now: it owns the worker's attachment
}

// await waits for a call's answer, writes it and ends the call (Span). again are a retry's
// questions the client left unanswered, asked again at once. It returns whether the call was
// parked for the client's input.
func (a *Adapter) await(w http.ResponseWriter, r *http.Request, pk *parked, span trace.Span, log *slog.Logger,
	again map[string]*jsonrpc.Message) (parkedNow bool) {
	c := &Wait{
		Call: pk.call, ID: pk.msg.ID, Method: pk.msg.Method, Access: pk.access, Member: pk.member,
		Events: &pk.caller.events, Requests: pk.caller.requests, Detached: pk.caller.detached,
		Span: span, Log: log, Tool: pk.name, a: a, pk: pk, again: again,
	}
	for _, req := range again {
		// One wakes the wait loop's Park, which takes them all; when the queue is full, the
		// worker's own next question does.
		select {
		case pk.caller.requests <- req:
		default:
		}
		break
	}
	a.Steps.Await(w, r, c)
	return c.parked
}

// Result maps the worker's answer to 2026-07-28 (spliceResult, resourceNotFound). An answer
// that cannot be mapped fails closed.
func (c *Wait) Result(resp *jsonrpc.Message) *jsonrpc.Message {
	if resp.Error != nil {
		if c.Method == "resources/read" && !c.Member.AttachedSessionless() {
			return resourceNotFound(resp)
		}
		return resp
	}
	mapped, err := spliceResult(c.Method, resp.Result)
	if err != nil {
		return jsonrpc.ErrorResponse(resp.ID, jsonrpc.CodeInternalError, "the worker's answer is malformed", nil)
	}
	out := *resp
	out.Result = mapped
	return &out
}

// Answer is the worker's answer as the client gets it (Result), and its audit outcome when
// not the answer's own (""): a sessionless worker's input-required result gets its
// requestState wrapped, and the id is the request's (after a retry, the retry's: the original
// request is answered already).
func (c *Wait) Answer(resp *jsonrpc.Message, _ map[string]policy.Hints) (*jsonrpc.Message, string) {
	resp = c.Result(resp)
	outcome := ""
	if resp.Error == nil && c.Member.AttachedSessionless() {
		resp, outcome = c.a.passInputRequired(c.pk, resp)
	}
	out := *resp
	out.ID = c.ID
	return &out, outcome
}

// ErrorStatus is the HTTP status of an error answer written before a stream began (SEP-2575).
func (c *Wait) ErrorStatus(resp *jsonrpc.Message) int {
	var e struct {
		Code int64 `json:"code"`
	}
	_ = json.Unmarshal(resp.Error, &e) // 0 when unreadable: 200
	switch e.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, CodeUnsupportedVersion, CodeMissingCapability, CodeHeaderMismatch:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// ClientGone: closing the request's stream cancels the call.
func (c *Wait) ClientGone() (reason, outcome string) {
	return "client closed the request's stream", "cancelled"
}

// Park parks the call with the worker's questions sent together and returns the input-required
// result to answer with. A question needing a capability the request did not declare is
// refused to the worker (declared.sort); when none is left, the call ends and the client gets
// MissingRequiredClientCapability. A question the worker withdrew is not asked. When the call
// cannot be parked, or nothing is left to ask, it goes on (false).
func (c *Wait) Park(req *jsonrpc.Message) (*jsonrpc.Message, bool) {
	pk := c.pk
	var lacking map[string]any
	asked := gatherRequests(req, pk.caller.requests)
	maps.Copy(asked, c.again)
	c.again = nil
	maps.DeleteFunc(asked, func(_ string, r *jsonrpc.Message) bool {
		return !pk.member.Asks(r.ID) // withdrawn by the worker (notifications/cancelled): not asked
	})
	if len(asked) == 0 {
		return nil, false // all withdrawn: the call goes on
	}
	pk.requests, lacking = pk.declared.sort(asked, pk.member.Refuse)
	if len(pk.requests) == 0 {
		c.Call.Cancel("the client did not declare a capability the call needs")
		return jsonrpc.ErrorResponse(c.ID, CodeMissingCapability, "the request needs a client capability it did not declare",
			map[string]any{"requiredCapabilities": lacking}), true
	}
	result, err := c.a.park(pk)
	if err != nil {
		return nil, false
	}
	c.parked = true
	return &jsonrpc.Message{ID: c.ID, Result: result}, true
}

// gatherRequests collects the worker's requests sent together with first: those already
// queued and those that follow within bridgeGather.
func gatherRequests(first *jsonrpc.Message, more <-chan *jsonrpc.Message) map[string]*jsonrpc.Message {
	out := map[string]*jsonrpc.Message{workerRequestKey(first): first}
	t := time.NewTimer(bridgeGather)
	defer t.Stop()
	for {
		select {
		case req := <-more:
			out[workerRequestKey(req)] = req
		case <-t.C:
			return out
		}
	}
}

// codeLegacyResourceNotFound is the resource-not-found code of 2025-11-25 and before;
// 2026-07-28 (SEP-2164) answers an unknown resource with invalid params instead.
const codeLegacyResourceNotFound = "-32002"

// resourceNotFound is a legacy worker's error answer to resources/read with the code of
// 2026-07-28, message and data kept. An error that names its code twice, or in another case,
// is left alone (the client refuses it as the worker sent it).
func resourceNotFound(resp *jsonrpc.Message) *jsonrpc.Message {
	e, err := jsonrpc.ReadObject(resp.Error, "error")
	if err != nil || e.Exact("code") != nil {
		return resp
	}
	if code, _ := e.Raw("code"); string(code) != codeLegacyResourceNotFound {
		return resp
	}
	out := *resp
	out.Error = e.Edit(func(key string, v json.RawMessage) json.RawMessage {
		if key == "code" {
			return json.RawMessage(strconv.Itoa(jsonrpc.CodeInvalidParams))
		}
		return v
	})
	return &out
}
