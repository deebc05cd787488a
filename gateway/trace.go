package gateway

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"
)

// Tracer writes every JSON-RPC message to the log, one line each, for finding out what a
// client really sent. Bodies only: headers, where tokens travel, are never traced.
type Tracer struct {
	Logger *slog.Logger
	Limit  int // bodies longer than this are cut with "...(+N more)"; <= 0 means no cap
}

func (t *Tracer) inbound(session string, body []byte)  { t.line("client_to_gateway", session, body) }
func (t *Tracer) outbound(session string, body []byte) { t.line("gateway_to_client", session, body) }

func (t *Tracer) line(direction, session string, body []byte) {
	if t == nil {
		return
	}
	t.Logger.Info("trace", "direction", direction, "session", session, "size", len(body), "body", t.cut(body))
}

// refused traces a request turned away before the session layer, without its body when the
// body was never read.
func (t *Tracer) refused(r *http.Request, status int) {
	if t == nil {
		return
	}
	t.Logger.Info("trace", "direction", "client_to_gateway", "session", r.Header.Get(headerSessionID),
		"refused", status, "method", r.Method)
}

// cut escapes newlines and tabs so one message is one line, then applies the cap.
func (t *Tracer) cut(body []byte) string {
	s := strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(string(body))
	if t.Limit > 0 && len(s) > t.Limit {
		return s[:t.Limit] + "...(+" + strconv.Itoa(len(s)-t.Limit) + " more)"
	}
	return s
}

// traceRefused notes requests that the authentication or origin gates turn away.
func (g *Gateway) traceRefused(next http.Handler) http.Handler {
	if g.trace == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if c := rec.status(); c == http.StatusUnauthorized || (c == http.StatusForbidden && rec.Header().Get("WWW-Authenticate") != "") {
			g.trace.refused(r, c)
		}
	})
}
