package wire

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// Error is an answer the gateway gives instead of forwarding. Cause is for the log only.
type Error struct {
	Status  int
	Code    int64           // JSON-RPC error code; 0 means a plain-text body
	Message string          // safe to show the client
	ID      json.RawMessage // the request id, when one is known
	Data    any
	Header  http.Header
	Cause   error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Message + ": " + e.Cause.Error()
	}
	return e.Message
}

func (e *Error) Write(w http.ResponseWriter) {
	for k, vs := range e.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if e.Code == 0 {
		http.Error(w, e.Message, e.Status)
		return
	}
	WriteBody(w, e.Status, jsonrpc.ErrorResponse(e.ID, e.Code, e.Message, e.Data).Encode())
}

func BadRequest(msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest, Message: msg}
}

// SessionNotFound is the 404 for a session that is not the caller's, not open or ending.
func SessionNotFound(id json.RawMessage) *Error {
	return &Error{Status: http.StatusNotFound, Code: jsonrpc.CodeInvalidRequest, ID: id,
		Message: "session not found; initialize a new one"}
}

// Overloaded is a 503: the gateway cannot take the request now, and says when to try again.
func Overloaded(id json.RawMessage, msg string, retryAfter time.Duration, cause error) *Error {
	return retryLater(http.StatusServiceUnavailable, id, msg, retryAfter, cause)
}

// TooManyRequests is a 429: this caller is over one of its own limits.
func TooManyRequests(id json.RawMessage, msg string, retryAfter time.Duration) *Error {
	return retryLater(http.StatusTooManyRequests, id, msg, retryAfter, nil)
}

// retryLater says when to come back in Retry-After and in the JSON-RPC error's data.
func retryLater(status int, id json.RawMessage, msg string, retryAfter time.Duration, cause error) *Error {
	secs := RetryAfterSeconds(retryAfter)
	h := http.Header{}
	h.Set("Retry-After", strconv.FormatInt(secs, 10))
	return &Error{Status: status, Code: jsonrpc.CodeInternalError, ID: id, Message: msg, Header: h, Cause: cause,
		Data: map[string]any{"retryAfter": secs}}
}

// RetryAfterSeconds is d in whole seconds, rounded up, at least 1.
func RetryAfterSeconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

// WriteBody writes an encoded JSON-RPC message as application/json, bounded (WriteFlushed) if
// it may block on the socket. A smaller one is left to net/http: flushing it would cost a
// refused request's trace its body, which net/http discards once the header goes out.
func WriteBody(w http.ResponseWriter, status int, body []byte) {
	WriteBodyWithin(w, status, body, WriteTimeout)
}

// WriteBodyWithin is WriteBody with each write bounded by timeout (WriteFlushed).
func WriteBodyWithin(w http.ResponseWriter, status int, body []byte, timeout time.Duration) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if len(body) < directAnswer {
		_, _ = w.Write(body)
		return
	}
	_ = WriteFlushed(http.NewResponseController(w), w, body, nil, timeout)
}

// directAnswer is net/http's bufferBeforeChunkingSize.
const directAnswer = 2 << 10

// WriteTimeout is the default bound of every write to a client.
const WriteTimeout = 5 * time.Second

const (
	WriteChunk   = 64 << 10
	MinWriteRate = 64 << 10 // bytes per second
)

// ErrWriteStopped is a long write given up between chunks because stop was closed.
var ErrWriteStopped = errors.New("write stopped: the stream is ending")

// WriteFlushed writes and flushes b, each WriteChunk within timeout and the whole within
// timeout plus len(b) at MinWriteRate (16 MiB in under 5 minutes). stop, if not nil, ends a
// long write between chunks (shutdown).
func WriteFlushed(rc *http.ResponseController, w io.Writer, b []byte, stop <-chan struct{}, timeout time.Duration) error {
	now := time.Now()
	end := now.Add(timeout + time.Duration(len(b))*time.Second/MinWriteRate)
	for {
		n := min(len(b), WriteChunk)
		d := now.Add(timeout)
		if d.After(end) {
			d = end
		}
		_ = rc.SetWriteDeadline(d)
		if _, err := w.Write(b[:n]); err != nil {
			return err
		}
		if b = b[n:]; len(b) == 0 {
			break
		}
		select {
		case <-stop:
			return ErrWriteStopped
		default:
		}
		now = time.Now()
	}
	err := rc.Flush()
	_ = rc.SetWriteDeadline(time.Time{})
	return err
}
