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
	switch {
	case until.IsZero() && also == nil: // auth none: no token to outlive
		return nil, func() {}
	case until.IsZero():
		return also.Done(), func() {}
	case also == nil:
		also = context.Background()
	}
	ctx, cancel := context.WithDeadline(also, until)
	return ctx.Done(), cancel
}
