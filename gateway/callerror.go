package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gemgate/gemgate/gateway/limit"
	"github.com/gemgate/gemgate/gateway/wire"
	textclip "github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// How long a call refused for a busy or missing worker is told to wait.
const workerBusyRetryAfter = 1

// callError is the answer to a request the pool could not serve, in either era: its worker
// could not be had (attached, started, restarted or renewed) or the call not handed to it.
// A client that went away gets none (the sessionless adapter's attachError, attachError). ErrDetached is a
// session's end; a sessionless caller, which has no session to lose, answers it itself.
func callError(id json.RawMessage, err error) *wire.Error {
	var rate *limit.RateError
	var refused *pool.RefusedError
	var start *pool.StartError
	switch {
	case errors.Is(err, pool.ErrDetached):
		e := wire.SessionNotFound()
		e.ID = id
		return e
	case errors.Is(err, pool.ErrWorkerBusy):
		h := http.Header{}
		h.Set("Retry-After", fmt.Sprint(workerBusyRetryAfter))
		return &wire.Error{Status: http.StatusTooManyRequests, Code: jsonrpc.CodeInternalError, ID: id, Header: h,
			Message: "too many calls are waiting for your worker; wait for one to finish"}
	case errors.As(err, &rate):
		return wire.TooManyRequests(id, "your worker is being started too often; wait before the next request", rate.Wait)
	case errors.Is(err, pool.ErrTooManyWorkers):
		return wire.Overloaded(id, err.Error(), workerRetryAfter, nil)
	case errors.Is(err, pool.ErrClosed):
		return wire.Overloaded(id, "the gateway is shutting down", shutdownRetryAfter, nil)
	case errors.Is(err, pool.ErrInitTimeout):
		return wire.Overloaded(id, "the worker did not start in time", workerRetryAfter, nil)
	case errors.Is(err, pool.ErrGrantMismatch):
		// A request whose token grants other scopes or audiences than the worker was started
		// with: it may not start or renew the worker with what its token grants.
		return wire.Overloaded(id, "the session's worker is not running or its credential expired, and it is started or renewed only by a request whose token grants the scopes and audiences of the token the session was opened with; "+
			"retry with such a token, or open a new session", workerRetryAfter, nil)
	case errors.Is(err, pool.ErrAccessMismatch):
		// A read-write session's request whose token lacks the write scope: its read-write
		// worker is not running, or its credential expired (on_token_expiry: restart), and it
		// is started or renewed only by a request that may write.
		return wire.Overloaded(id, "the session's read-write worker is not running or its credential expired, and a request whose token lacks the write scope does not start or renew it; "+
			"retry with a token that has the write scope, or open a read-only session", workerRetryAfter, nil)
	case errors.As(err, &refused):
		// The worker's own refusal (a backend login refused, say): its message, clipped.
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

// attachFailed is callError for a request whose worker could not be had: one that failed for
// no reason callError names (a start that panicked, say) is a worker that could not be
// started, 503, never the 200 of a call whose worker is gone, since no call was made.
func attachFailed(id json.RawMessage, err error) *wire.Error {
	if he := callError(id, err); he.Status != http.StatusOK {
		return he
	}
	return wire.Overloaded(id, "could not start a worker for this request", workerRetryAfter, err)
}
