package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gemgate/gemgate/gateway/limit"
	"github.com/gemgate/gemgate/gateway/wire"
	textclip "github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// filterTools drops from a list answer what access may not use (malformed: fails closed), and
// returns the tools' annotations.
func (g *Gateway) filterTools(log *slog.Logger, m *pool.Member, method string, access policy.Access,
	resp *jsonrpc.Message) (*jsonrpc.Message, map[string]policy.Hints) {
	if !policy.Filters(method) || resp.Result == nil {
		return resp, nil
	}
	filtered, hints, n, err := g.opts.Policy.FilterList(method, access, resp.Result)
	if err != nil {
		log.Warn("worker's "+method+" answer is malformed; refused", "error", err)
		return jsonrpc.ErrorResponse(resp.ID, jsonrpc.CodeInternalError, "the worker's "+strings.TrimSuffix(method, "/list")+" list is malformed", nil), nil
	}
	if access.ReadOnly && method == "tools/list" && n.ReadOnly > 0 && m.FirstTime("read-only tools hidden") {
		log.Info(fmt.Sprintf("read-only sessions see %d of %d tools of this worker; list the safe ones in read_only_tools (policy/presets has some servers' lists) or set trust_read_only_hints",
			n.Allowed, n.Total), "hidden", n.ReadOnly, "tools", n.Total)
	}
	if method == "tools/list" {
		// A tool listed without annotations has MCP's defaults, which learnHints merges with
		// what an earlier list said of it: a worker may take a readOnlyHint back.
		names, _, _ := policy.ListNames(method, resp.Result) // FilterList read it already
		for _, name := range names {
			if _, ok := hints[name]; !ok {
				if hints == nil {
					hints = make(map[string]policy.Hints, len(names))
				}
				hints[name] = policy.DefaultHints()
			}
		}
	}
	out := *resp
	out.Result = filtered
	return &out, hints
}

// learnHints keeps the annotations of a session's tools/list answers, for its tool gate: each
// tool's as every listing since the session last forgot them says, merged the cautious way
// (Hints.And), as the gate's lookup merges a tool listed on two pages, so that the order in
// which the client reads the pages does not decide. Not those of a request begun before the
// session last forgot them (epoch): the worker's list_changed, or a step-up, may have come
// after that answer was made, though the request's goroutine reads the answer later. Nor those
// of an answer whose worker (the one running when the request began) is not the session's
// worker now: hints are one worker's, and a session outlives its worker (on_worker_exit: keep),
// whose successor may list its tools otherwise.
func (s *session) learnHints(hints map[string]policy.Hints, epoch uint64, worker string) {
	if len(hints) == 0 || worker == "" || s.member.RunningWorkerID() != worker {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hintsEpoch != epoch {
		return
	}
	if s.hintsWorker != worker {
		clear(s.hints) // another worker's
		s.hintsWorker = worker
	}
	if s.hints == nil {
		s.hints = make(map[string]policy.Hints, len(hints))
	}
	for name, h := range hints {
		if old, ok := s.hints[name]; ok {
			h = old.And(h)
		}
		s.hints[name] = h
	}
}

func callOutcome(method string, resp *jsonrpc.Message) string {
	switch {
	case resp.Error != nil:
		return "error"
	case method == "tools/call" && isToolError(resp.Result):
		return "tool_error"
	}
	return "ok"
}

// busy is the 429 of a limit that frees within a second: Retry-After only, no data.
func busy(id json.RawMessage, msg string) *wire.Error {
	h := http.Header{}
	h.Set("Retry-After", "1")
	return &wire.Error{Status: http.StatusTooManyRequests, Code: jsonrpc.CodeInternalError, ID: id, Header: h,
		Message: msg}
}

// callError answers a request whose worker could not be had or call not handed to it.
func callError(id json.RawMessage, err error) *wire.Error {
	var rate *limit.RateError
	var refused *pool.RefusedError
	var start *pool.StartError
	switch {
	case errors.Is(err, pool.ErrDetached):
		return wire.SessionNotFound(id)
	case errors.Is(err, pool.ErrWorkerBusy):
		return busy(id, "too many calls are waiting for your worker; wait for one to finish")
	case errors.As(err, &rate):
		return wire.TooManyRequests(id, "your worker is being started too often; wait before the next request", rate.Wait)
	case errors.Is(err, pool.ErrTooManyWorkers):
		return wire.Overloaded(id, err.Error(), workerRetryAfter, nil)
	case errors.Is(err, pool.ErrClosed):
		return wire.Overloaded(id, "the gateway is shutting down", shutdownRetryAfter, nil)
	case errors.Is(err, pool.ErrInitTimeout):
		return wire.Overloaded(id, "the worker did not start in time", workerRetryAfter, nil)
	case errors.Is(err, pool.ErrGrantMismatch):
		return wire.Overloaded(id, "the session's worker is not running or its credential expired, and it is started or renewed only by a request whose token grants the scopes and audiences of the token the session was opened with; "+
			"retry with such a token, or open a new session", workerRetryAfter, nil)
	case errors.Is(err, pool.ErrAccessMismatch):
		return wire.Overloaded(id, "the session's read-write worker is not running or its credential expired, and a request whose token lacks the write scope does not start or renew it; "+
			"retry with a token that has the write scope, or open a read-only session", workerRetryAfter, nil)
	case errors.As(err, &refused):
		// The worker's own refusal (a backend login refused, say), clipped.
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(refused.Answer, &e)
		return &wire.Error{Status: http.StatusServiceUnavailable, Code: jsonrpc.CodeInternalError, ID: id,
			Message: "the worker refused to start: " + textclip.String(e.Message, 200)}
	case errors.As(err, &start) && start.Exited:
		return wire.Overloaded(id, "the worker exited at start", workerRetryAfter, err)
	case errors.As(err, &start):
		return wire.Overloaded(id, "could not start a worker for this request", workerRetryAfter, err)
	}
	return &wire.Error{Status: http.StatusOK, Code: jsonrpc.CodeInternalError, ID: id, Message: "the worker is gone", Cause: err}
}

// attachFailed is callError before any call: an unnamed failure is a 503, never a 200.
func attachFailed(id json.RawMessage, err error) *wire.Error {
	if he := callError(id, err); he.Status != http.StatusOK {
		return he
	}
	return wire.Overloaded(id, "could not start a worker for this request", workerRetryAfter, err)
}
