package gateway

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gemgate/gemgate/gateway/limit"
	"github.com/gemgate/gemgate/gateway/wire"
	textclip "github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// busy is the 429 for a call over a limit that frees within a second: Retry-After only, no
// retryAfter data (unlike wire.TooManyRequests).
func busy(id json.RawMessage, msg string) *wire.Error {
	h := http.Header{}
	h.Set("Retry-After", "1")
	return &wire.Error{Status: http.StatusTooManyRequests, Code: jsonrpc.CodeInternalError, ID: id, Header: h, Message: msg}
}

// callError is the answer, in either era, to a request whose worker could not be had or the
// call not handed to it. ErrDetached is a session's end; a sessionless caller answers it itself.
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

// attachFailed is callError for a request whose worker could not be had: an unnamed failure
// (a start that panicked) is a 503, never the 200 of a call whose worker is gone.
func attachFailed(id json.RawMessage, err error) *wire.Error {
	if he := callError(id, err); he.Status != http.StatusOK {
		return he
	}
	return wire.Overloaded(id, "could not start a worker for this request", workerRetryAfter, err)
}
