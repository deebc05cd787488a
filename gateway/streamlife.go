package gateway

import (
	"context"
	"net/http"

	"github.com/gemgate/gemgate/auth"
)

// streamDone is the done channel of a stream that may stay open for hours (a session's GET
// stream, a resumed POST stream, a 2026-07-28 listen): closed when the client goes, or when
// the token that opened the stream is no longer accepted (its exp and the allowed clock
// skew). Every request needs a live token, and a stream is a request: one opened with a token
// that has since expired, or was never renewed because its user was disabled, must not go on
// receiving the session's messages. Nothing is lost by its end: the client comes back with
// a fresh token and Last-Event-ID, as after any dropped stream. stop releases the timer;
// call it when the stream ends. The channel does not hold the request, whose context carries
// the verified token. With also, the stream ends when also is done too.
func streamDone(r *http.Request, also context.Context) (done <-chan struct{}, stop func()) {
	p, _ := auth.PrincipalFrom(r.Context())
	until := auth.AcceptedUntil(p)
	if until.IsZero() && also == nil { // auth none: no token to outlive
		return r.Context().Done(), func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	if !until.IsZero() {
		ctx, cancel = context.WithDeadline(context.Background(), until)
	}
	unhook := context.AfterFunc(r.Context(), cancel)
	unhookAlso := func() bool { return false }
	if also != nil {
		unhookAlso = context.AfterFunc(also, cancel)
	}
	return ctx.Done(), func() { unhook(); unhookAlso(); cancel() }
}
