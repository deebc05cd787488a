package sessions

import (
	"context"
	"net/http"

	"github.com/gemgate/gemgate/auth"
)

// StreamEnd is when a stream that may stay open for hours (a session's GET stream, a
// resumed POST stream, a 2026-07-28 listen) must end though its client is still there: when
// the token that opened it is no longer accepted (its exp and the allowed clock skew), or when
// also is done. Every request needs a live token, and a stream is a request: one opened with
// a token that has since expired, or was never renewed because its user was disabled, must
// not go on receiving the session's messages. Nothing is lost by its end: the client comes
// back with a fresh token and Last-Event-ID, as after any dropped stream. The channel is nil
// (never ready) when there is nothing to end it; stop releases its timer, and is called when
// the stream ends. Neither holds the request, whose context carries the verified token: the
// stream's wait takes the request's done channel beside this one.
func StreamEnd(r *http.Request, also context.Context) (end <-chan struct{}, stop func()) {
	p, _ := auth.PrincipalFrom(r.Context())
	until := auth.AcceptedUntil(p)
	if until.IsZero() && also == nil { // auth none: no token to outlive
		return nil, func() {}
	}
	var ctx context.Context
	var cancel context.CancelFunc
	if until.IsZero() {
		ctx, cancel = context.WithCancel(context.Background())
	} else {
		ctx, cancel = context.WithDeadline(context.Background(), until)
	}
	unhook := func() bool { return false }
	if also != nil {
		unhook = context.AfterFunc(also, cancel)
	}
	return ctx.Done(), func() { unhook(); cancel() }
}
