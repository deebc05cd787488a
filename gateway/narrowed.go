package gateway

import (
	"encoding/json"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/jsonrpc"
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
	current := s.currentAccess()
	if current.ReadOnly {
		return nil
	}
	decided := g.opts.Policy.Decide(p.Scopes)
	if !decided.ReadOnly {
		return nil
	}
	write := g.opts.Policy.WriteScope()
	return g.insufficientScope(nil, current.Narrow(decided), []string{write}, "readOnly",
		"this session is read-write and this token may only read: "+what+" needs a token with scope "+write)
}

// askedByReadOnlyCall reports whether the worker request a client's answer (of id id) is for
// was sent with a call made with read-only access: a read-only tool that asks its caller
// something (sampling, an elicitation) is answered by that caller, whose token may only read.
func (s *session) askedByReadOnlyCall(id json.RawMessage) bool {
	c := s.member.RequestCall(id)
	if c == nil {
		return false
	}
	inf, _ := c.Tag().(*inflight)
	return inf != nil && inf.readOnly
}

// cancelsReadOnlyCall reports whether msg is a notifications/cancelled of a call in flight
// that was made with read-only access: a read-only token may cancel its own call, not a
// read-write one's.
func (s *session) cancelsReadOnlyCall(msg *jsonrpc.Message, f clientFields) bool {
	if msg.Method != "notifications/cancelled" || f.cancelID == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	inf := s.calls[string(f.cancelID)]
	return inf != nil && inf.readOnly
}
