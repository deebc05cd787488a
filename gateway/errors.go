package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"

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

func overloaded(msg string, retryAfterSeconds int) *httpError {
	h := http.Header{}
	h.Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	return &httpError{Status: http.StatusServiceUnavailable, Code: jsonrpc.CodeInternalError, Message: msg, Header: h}
}

func writeMessage(w http.ResponseWriter, status int, m *jsonrpc.Message) {
	writeBody(w, status, m.Encode())
}

// writeBody writes an encoded JSON-RPC message as an application/json answer.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
