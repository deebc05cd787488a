package gateway

import (
	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
)

// narrowedRefusal refuses a request that would act on a read-write session's worker with a
// token that may only read: an answer to the worker's own request (an elicitation's
// "accept" decides whether a write goes ahead; refused whatever call the request was asked
// with: the pool never asks a call made with such a token, pool.workerRequest), its
// session's GET stream (where the worker asks those questions) and the session's end (which
// throws away what the worker holds uncommitted). A read-only token on a read-write session is narrowed per request, so that
// its calls of mutating tools meet 403; these three have no tool to check, and are refused
// the same way, with the challenge that asks for the write scope. nil when the token's
// access is not narrower than the session's.
func (g *Gateway) narrowedRefusal(s *session, p auth.Principal, what string) *wire.Error {
	current := s.currentAccess()
	if current.ReadOnly {
		return nil
	}
	decided := g.decide(p)
	if !decided.ReadOnly {
		return nil
	}
	write := g.opts.Policy.WriteScope()
	return g.insufficientScope(nil, current.Narrow(decided), []string{write}, "readOnly",
		"this session is read-write and this token may only read: "+what+" needs a token with scope "+write)
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
