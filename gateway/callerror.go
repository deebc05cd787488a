package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// How long a call refused for a busy or missing worker is told to wait.
const workerBusyRetryAfter = 1

// callError is the answer to a request the pool could not hand to a worker.
func callError(id json.RawMessage, err error) *httpError {
	var rate *rateError
	switch {
	case errors.Is(err, pool.ErrDetached):
		e := sessionNotFound()
		e.ID = id
		return e
	case errors.Is(err, pool.ErrWorkerBusy):
		h := http.Header{}
		h.Set("Retry-After", fmt.Sprint(workerBusyRetryAfter))
		return &httpError{Status: http.StatusTooManyRequests, Code: jsonrpc.CodeInternalError, ID: id, Header: h,
			Message: "too many calls are waiting for your worker; wait for one to finish"}
	case errors.As(err, &rate):
		return tooManyRequests(id, "your worker is being restarted too often; wait before the next request", rate.wait)
	case errors.Is(err, pool.ErrTooManyWorkers), errors.Is(err, pool.ErrClosed):
		return overloaded(id, "no worker can be started now; try again later", workerRetryAfter, nil)
	case errors.Is(err, pool.ErrGrantMismatch):
		// A request whose token grants other scopes or audiences than the worker was started
		// with: it may not start or renew the worker with what its token grants.
		return overloaded(id, "the session's worker is not running or its credential expired, and it is started or renewed only by a request whose token grants the scopes and audiences of the token the session was opened with; "+
			"retry with such a token, or open a new session", workerRetryAfter, nil)
	case errors.Is(err, pool.ErrAccessMismatch):
		// A read-write session's request whose token lacks the write scope: its read-write
		// worker is not running, or its credential expired (on_token_expiry: restart), and it
		// is started or renewed only by a request that may write.
		return overloaded(id, "the session's read-write worker is not running or its credential expired, and a request whose token lacks the write scope does not start or renew it; "+
			"retry with a token that has the write scope, or open a read-only session", workerRetryAfter, nil)
	}
	return &httpError{Status: http.StatusOK, Code: jsonrpc.CodeInternalError, ID: id, Message: "the session's worker is gone", Cause: err}
}
