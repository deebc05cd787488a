package gateway

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gemgate/gemgate/auth"
)

// Tracer writes every JSON-RPC message to the log, one line each, for finding out what a
// client really sent. Bodies only: headers, where tokens travel, are never traced, and the
// values of body fields named like credentials are redacted (redact). Every line, whichever
// way its message goes, is also redacted of the secrets of every worker (secrets): a
// credential a worker echoes is redacted in the line that reads it from the worker and in
// each line that carries the same bytes on, to the client or in a replay.
type Tracer struct {
	Logger *slog.Logger
	Limit  int // bodies longer than this are cut with "...(+N more)"; <= 0 means no cap

	// secrets takes the workers' secrets out of a line (pool.Pool.RedactSecrets); the
	// gateway sets it on its own copy of the Tracer.
	secrets func([]byte) []byte
}

// inbound traces a client's message, r's body: without the token the request carried, which
// a body may quote too (a client's tool argument, a form field) and which is never traced.
// Not inlined: a POST's handler frame stays as small as it was, for the streams it serves
// for hours (TestIdleListenStackNeverDoubles).
//
//go:noinline
func (t *Tracer) inbound(r *http.Request, body []byte) {
	if t == nil {
		return
	}
	if bearer := bearerOf(r); bearer != "" {
		body = bytes.ReplaceAll(body, []byte(bearer), []byte(redacted))
	}
	t.line("client_to_gateway", loggedSessionID(r.Header), body)
}

// bearerOf is the request's bearer token, "" when it carries none that gemgate reads.
func bearerOf(r *http.Request) string {
	tok, err := auth.BearerToken(r)
	if err != nil {
		return ""
	}
	return tok
}

func (t *Tracer) outbound(session string, body []byte) { t.line("gateway_to_client", session, body) }

func (t *Tracer) line(direction, session string, body []byte) {
	if t == nil {
		return
	}
	t.Logger.Info("trace", "direction", direction, "session", session, "size", len(body), "body", t.cut(body, 0))
}

// refused traces a request turned away before the session layer. body is what was read of
// it (at most the cap) and unread how many bytes followed.
func (t *Tracer) refused(r *http.Request, status int, body []byte, unread int) {
	if t == nil {
		return
	}
	if bearer := bearerOf(r); bearer != "" {
		body = bytes.ReplaceAll(body, []byte(bearer), []byte(redacted))
	}
	t.Logger.Info("trace", "direction", "client_to_gateway", "session", loggedSessionID(r.Header),
		"refused", status, "method", r.Method, "size", len(body)+unread, "body", t.cut(body, unread))
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

// refusedReadTimeout bounds how long the trace waits for a refused request's body.
const refusedReadTimeout = 2 * time.Second

// traceRefused notes requests that the authentication or origin gates turn away, with their
// body: the gates never read it, so it is read here, after the refusal, up to the cap (the
// rest only counted, up to the body limit). A body the session layer already read was traced
// there.
func (g *Gateway) traceRefused(next http.Handler) http.Handler {
	if g.trace == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		tap := &readTap{ReadCloser: r.Body}
		r.Body = tap
		next.ServeHTTP(rec, r)
		c := rec.status()
		if (c != http.StatusUnauthorized && c != http.StatusForbidden) || tap.n > 0 {
			return
		}
		body, unread := g.readRefused(w, tap)
		g.trace.refused(r, c, body, unread)
	})
}

func (g *Gateway) readRefused(w http.ResponseWriter, body io.Reader) ([]byte, int) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(refusedReadTimeout))
	defer rc.SetReadDeadline(time.Time{})
	keep := g.opts.MaxBodyBytes
	if l := int64(g.trace.Limit); l > 0 && l < keep {
		keep = l
	}
	b, _ := io.ReadAll(io.LimitReader(body, keep))
	rest, _ := io.Copy(io.Discard, io.LimitReader(body, g.opts.MaxBodyBytes-int64(len(b))))
	return b, int(rest)
}

// readTap counts what a handler read of a request body.
type readTap struct {
	io.ReadCloser
	n int64
}

func (t *readTap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.n += int64(n)
	return n, err
}
