package sessions

import (
	"context"
	"net/http"

	"github.com/gemgate/gemgate/auth"
)

// StreamEnd is closed when the token that opened a long-lived stream is no longer accepted, or
// also is done: every request needs a live token, and the client resumes with a fresh one.
// end is nil when nothing ends it; stop releases the timer. Neither holds the request.
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
