package gateway

import (
	"github.com/gemgate/gemgate/auth"
)

// narrowedRefusal refuses a request that would act on a read-write session's worker with a
// token that may only read: an answer to the worker's own request (an elicitation's
// "accept" decides whether a write goes ahead), its session's GET stream (where the worker
// asks those questions) and the session's end (which throws away what the worker holds
// uncommitted). A read-only token on a read-write session is narrowed per request, so that
// its calls of mutating tools meet 403; these three have no tool to check, and are refused
// the same way, with the challenge that asks for the write scope. nil when the token's
// access is not narrower than the session's.
func (g *Gateway) narrowedRefusal(s *session, p auth.Principal, what string) *httpError {
	if s.currentAccess().ReadOnly {
		return nil
	}
	decided := g.opts.Policy.Decide(p.Scopes)
	if !decided.ReadOnly {
		return nil
	}
	write := g.opts.Policy.WriteScope()
	return g.insufficientScope(nil, s.currentAccess().Narrow(decided), []string{write}, "readOnly",
		"this session is read-write and this token may only read: "+what+" needs a token with scope "+write)
}
