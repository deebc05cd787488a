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

// Tracer writes every JSON-RPC message to the log, one line each (see the package doc).
type Tracer struct {
	Logger *slog.Logger
	Limit  int // bodies longer than this are cut with "...(+N more)"; <= 0 means no cap

	secrets func([]byte) []byte // see WithSecrets
}

// Request is what a client's line says of the request its body came with.
type Request struct {
	Session string // the Mcp-Session-Id as log lines carry it
	Bearer  string // the request's bearer token, taken out of the body
	Method  string // the HTTP method, for a refused request's line
}

// WithSecrets is a copy of t that also redacts what secrets finds in every line.
func (t *Tracer) WithSecrets(secrets func([]byte) []byte) *Tracer {
	if t == nil {
		return nil
	}
	c := *t
	c.secrets = secrets
	return &c
}

// Inbound traces a client's message, without the request's token, which the body may quote.
func (t *Tracer) Inbound(r Request, body []byte) {
	if t == nil {
		return
	}
	t.Line("client_to_gateway", r.Session, withoutBearer(body, r.Bearer))
}

// Outbound traces a message of the gateway's to a client of session ("" for none).
func (t *Tracer) Outbound(session string, body []byte) { t.Line("gateway_to_client", session, body) }

// Line traces a message going direction on behalf of session, a session id or a worker's.
func (t *Tracer) Line(direction, session string, body []byte) {
	if t == nil {
		return
	}
	t.Logger.Info("trace", "direction", direction, "session", session, "size", len(body), "body", t.cut(body, 0))
}

const refusedReadTimeout = 2 * time.Second

// Refused traces a request the gates turned away unread: its body is read here, within
// refusedReadTimeout, up to the cap, the rest only counted, up to bodyLimit in all.
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

// jwtShaped is a compact JWS, as bearer tokens are: taken out wherever it stands (a token
// echoed by a worker that does not hold it, one a tool returns, a refreshed one).
var jwtShaped = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

var traceEscaper = strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`)

// cut redacts body, makes it one line and applies the cap (unread counts as cut).
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
