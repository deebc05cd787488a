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

// Error is an answer the gateway gives instead of forwarding: an HTTP status, optionally
// a JSON-RPC error body, and headers. Cause is for the log only and never reaches the client.
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
	WriteMessage(w, e.Status, jsonrpc.ErrorResponse(e.ID, e.Code, e.Message, e.Data))
}

func BadRequest(msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest, Message: msg}
}

func SessionNotFound() *Error {
	return &Error{Status: http.StatusNotFound, Code: jsonrpc.CodeInvalidRequest, Message: "session not found; initialize a new one"}
}

// Overloaded is a 503: the gateway cannot take the request now (shutting down, at its
// session cap, a worker that could not be started), and says when to try again. id is the
// request's own, so that the client can match the refusal to its call.
func Overloaded(id json.RawMessage, msg string, retryAfter time.Duration, cause error) *Error {
	return retryLater(http.StatusServiceUnavailable, id, msg, retryAfter, cause)
}

// TooManyRequests is a 429: this caller is over one of its own limits.
func TooManyRequests(id json.RawMessage, msg string, retryAfter time.Duration) *Error {
	return retryLater(http.StatusTooManyRequests, id, msg, retryAfter, nil)
}

// retryLater says when to come back twice: in Retry-After for HTTP clients, and in the
// error's data for clients that only see the JSON-RPC message.
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

func WriteMessage(w http.ResponseWriter, status int, m *jsonrpc.Message) {
	WriteBody(w, status, m.Encode())
}

// WriteBody writes an encoded JSON-RPC message as an application/json answer. One of
// directAnswer bytes or more passes net/http's first buffer in this Write, and may block on
// the socket here, so it is written and flushed as every stream's write is (WriteFlushed): a
// client that does not read it costs its connection, never a handler blocked for good
// holding the answer and the request. A smaller one stays in that buffer, and net/http
// writes it once the handler has returned; flushing it here would cost a refused request's
// trace its body, which net/http discards when the answer's header goes out before the body
// was read.
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

// directAnswer is the size from which net/http passes a response body on from its first
// buffer (bufferBeforeChunkingSize, 2 KiB) towards the connection.
const directAnswer = 2 << 10

// WriteTimeout is the default write timeout (the gateway's writeTimeout): it bounds every write
// to a client, so a client that stops reading costs a stream, never a goroutine parked
// forever.
const WriteTimeout = 5 * time.Second

// WriteChunk is how much of a long write must reach the client within the write timeout, and
// MinWriteRate the rate a long write must keep on the whole, past its first timeout.
const (
	WriteChunk   = 64 << 10
	MinWriteRate = 64 << 10 // bytes per second
)

// ErrWriteStopped is a long write given up between chunks because stop was closed.
var ErrWriteStopped = errors.New("write stopped: the stream is ending")

// WriteFlushed writes b and flushes it, each WriteChunk of it within timeout, and the whole
// within timeout plus len(b) at MinWriteRate: a client that reads at that rate gets all of a
// long answer (16 MiB in under 5 minutes), and one that stops reading, or reads more slowly,
// costs its connection, never a handler held for good. A write of one chunk or less (nearly
// every one) sets the deadline once, as a write with one deadline did. stop, if not nil,
// ends a long write between chunks: a GET stream ends at shutdown mid-message.
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
