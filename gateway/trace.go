package gateway

import (
	"net/http"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/trace"
	"github.com/gemgate/gemgate/gateway/wire"
)

// traceInbound traces a client's message. Not inlined: a POST's handler frame stays small
// (TestIdleListenStackNeverDoubles).
//
//go:noinline
func (g *Gateway) traceInbound(r *http.Request, body []byte) {
	g.trace.Inbound(tracedRequest(r), body)
}

// tracedRequest is what a trace line says of r, with the bearer token the trace redacts.
func tracedRequest(r *http.Request) trace.Request {
	tr := trace.Request{Session: loggedSessionID(r.Header), Method: r.Method}
	if tok, err := auth.BearerToken(r); err == nil {
		tr.Bearer = tok
	}
	return tr
}

// traceRefused traces requests the gates turn away, with the body they never read (a body
// read, as requestDeadline's arrival counts, was traced already).
func (g *Gateway) traceRefused(next http.Handler) http.Handler {
	if g.trace == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &wire.StatusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		c := rec.Status()
		body, _ := r.Body.(*arrival)
		if (c != http.StatusUnauthorized && c != http.StatusForbidden) || body != nil && body.n > 0 {
			return
		}
		g.trace.Refused(w, tracedRequest(r), c, r.Body, g.opts.MaxBodyBytes)
	})
}
