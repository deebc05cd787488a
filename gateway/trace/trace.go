package trace

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Tracer writes every JSON-RPC message to the log, one line each, for finding out what a
// client really sent. Bodies only: headers, where tokens travel, are never traced, and the
// values of body fields named like credentials are redacted (redact). Every line, whichever
// way its message goes, is also redacted of the secrets of every worker (WithSecrets): a
// credential a worker echoes is redacted in the line that reads it from the worker and in
// each line that carries the same bytes on, to the client or in a replay.
type Tracer struct {
	Logger *slog.Logger
	Limit  int // bodies longer than this are cut with "...(+N more)"; <= 0 means no cap

	secrets func([]byte) []byte // see WithSecrets
}

// Request is what a client's line says of the request its body came with, as the gateway
// read it off the HTTP request.
type Request struct {
	Session string // the Mcp-Session-Id as log lines carry it
	Bearer  string // the request's bearer token, taken out of the body; "" when none
	Method  string // the HTTP method, which a refused request's line names
}

// WithSecrets is a copy of t that also takes out of every line what secrets finds (the
// workers' secrets: pool.Pool.RedactSecrets); nil when t is nil. t is left as it was.
func (t *Tracer) WithSecrets(secrets func([]byte) []byte) *Tracer {
	if t == nil {
		return nil
	}
	c := *t
	c.secrets = secrets
	return &c
}

// Inbound traces a client's message: without the token the request carried, which a body
// may quote too (a client's tool argument, a form field) and which is never traced.
func (t *Tracer) Inbound(r Request, body []byte) {
	if t == nil {
		return
	}
	t.Line("client_to_gateway", r.Session, withoutBearer(body, r.Bearer))
}

// Outbound traces a message of the gateway's to a client of session ("" for none).
func (t *Tracer) Outbound(session string, body []byte) { t.Line("gateway_to_client", session, body) }

// Line traces a message going direction (client_to_gateway, to_worker...) on behalf of
// session, a session id or a worker's.
func (t *Tracer) Line(direction, session string, body []byte) {
	if t == nil {
		return
	}
	t.Logger.Info("trace", "direction", direction, "session", session, "size", len(body), "body", t.cut(body, 0))
}

// refusedReadTimeout bounds how long the trace waits for a refused request's body.
const refusedReadTimeout = 2 * time.Second

// Refused traces a request turned away before anything read its body (by the authentication
// or origin gates). The body is read here, after the refusal, within refusedReadTimeout: up
// to the cap, the rest only counted, up to bodyLimit bytes in all.
func (t *Tracer) Refused(w http.ResponseWriter, r Request, status int, body io.Reader, bodyLimit int64) {
	if t == nil {
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(refusedReadTimeout))
	defer rc.SetReadDeadline(time.Time{})
	keep := bodyLimit
	if l := int64(t.Limit); l > 0 && l < keep {
		keep = l
	}
	b, _ := io.ReadAll(io.LimitReader(body, keep))
	rest, _ := io.Copy(io.Discard, io.LimitReader(body, bodyLimit-int64(len(b))))
	b = withoutBearer(b, r.Bearer)
	t.Logger.Info("trace", "direction", "client_to_gateway", "session", r.Session,
		"refused", status, "method", r.Method, "size", len(b)+int(rest), "body", t.cut(b, int(rest)))
}

func withoutBearer(body []byte, bearer string) []byte {
	if bearer == "" {
		return body
	}
	return bytes.ReplaceAll(body, []byte(bearer), []byte(redacted))
}

// jwtShaped is a JWS in compact form, as bearer tokens and exchanged credentials are: three
// base64url parts, the first an encoded JSON object. Every one is taken out of the trace,
// wherever it stands: a client's own token echoed back to it by a worker that does not hold it
// (worker_credential: none), a token of the user's that a tool returns, a refreshed token the
// worker was never handed. None of them is a body's content worth tracing.
var jwtShaped = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

var traceEscaper = strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`)

// cut escapes newlines and tabs so one message is one line, then applies the cap; unread
// bytes that never reached body count towards the "...(+N more)".
func (t *Tracer) cut(body []byte, unread int) string {
	if t.secrets != nil {
		body = t.secrets(body)
	}
	body = jwtShaped.ReplaceAllLiteral(body, []byte(redacted))
	s := traceEscaper.Replace(string(redact(body)))
	if t.Limit > 0 && len(s) > t.Limit {
		unread += len(s) - t.Limit
		s = s[:t.Limit]
	}
	if unread > 0 {
		s += "...(+" + strconv.Itoa(unread) + " more)"
	}
	return s
}
