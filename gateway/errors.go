package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// httpError is an answer the gateway gives instead of forwarding: an HTTP status, optionally
// a JSON-RPC error body, and headers. Cause is for the log only and never reaches the client.
type httpError struct {
	Status  int
	Code    int64           // JSON-RPC error code; 0 means a plain-text body
	Message string          // safe to show the client
	ID      json.RawMessage // the request id, when one is known
	Data    any
	Header  http.Header
	Cause   error
}

func (e *httpError) Error() string {
	if e.Cause != nil {
		return e.Message + ": " + e.Cause.Error()
	}
	return e.Message
}

func (e *httpError) write(w http.ResponseWriter) {
	for k, vs := range e.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if e.Code == 0 {
		http.Error(w, e.Message, e.Status)
		return
	}
	writeMessage(w, e.Status, jsonrpc.ErrorResponse(e.ID, e.Code, e.Message, e.Data))
}

func badRequest(msg string) *httpError {
	return &httpError{Status: http.StatusBadRequest, Code: jsonrpc.CodeInvalidRequest, Message: msg}
}

func sessionNotFound() *httpError {
	return &httpError{Status: http.StatusNotFound, Code: jsonrpc.CodeInvalidRequest, Message: "session not found; initialize a new one"}
}

// overloaded is a 503: the gateway cannot take the request now (shutting down, at its
// session cap, a worker that could not be started), and says when to try again. id is the
// request's own, so that the client can match the refusal to its call.
func overloaded(id json.RawMessage, msg string, retryAfter time.Duration, cause error) *httpError {
	return retryLater(http.StatusServiceUnavailable, id, msg, retryAfter, cause)
}

// tooManyRequests is a 429: this caller is over one of its own limits.
func tooManyRequests(id json.RawMessage, msg string, retryAfter time.Duration) *httpError {
	return retryLater(http.StatusTooManyRequests, id, msg, retryAfter, nil)
}

// retryLater says when to come back twice: in Retry-After for HTTP clients, and in the
// error's data for clients that only see the JSON-RPC message.
func retryLater(status int, id json.RawMessage, msg string, retryAfter time.Duration, cause error) *httpError {
	secs := retryAfterSeconds(retryAfter)
	h := http.Header{}
	h.Set("Retry-After", strconv.FormatInt(secs, 10))
	return &httpError{Status: status, Code: jsonrpc.CodeInternalError, ID: id, Message: msg, Header: h, Cause: cause,
		Data: map[string]any{"retryAfter": secs}}
}

// retryAfterSeconds is d in whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

func writeMessage(w http.ResponseWriter, status int, m *jsonrpc.Message) {
	writeBody(w, status, m.Encode())
}

// writeBody writes an encoded JSON-RPC message as an application/json answer. One of
// directAnswer bytes or more passes net/http's first buffer in this Write, and may block on
// the socket here, so it is written and flushed as every stream's write is (writeFlushed): a
// client that does not read it costs its connection, never a handler blocked for good
// holding the answer and the request. A smaller one stays in that buffer, and net/http
// writes it once the handler has returned; flushing it here would cost a refused request's
// trace its body, which net/http discards when the answer's header goes out before the body
// was read.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	writeBodyWithin(w, status, body, sseWriteTimeout)
}

// writeBodyWithin is writeBody with each write bounded by timeout (writeFlushed).
func writeBodyWithin(w http.ResponseWriter, status int, body []byte, timeout time.Duration) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if len(body) < directAnswer {
		_, _ = w.Write(body)
		return
	}
	_ = writeFlushed(http.NewResponseController(w), w, body, nil, timeout)
}

// directAnswer is the size from which net/http passes a response body on from its first
// buffer (bufferBeforeChunkingSize, 2 KiB) towards the connection.
const directAnswer = 2 << 10
