package gateway

import (
	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
)

// narrowedRefusal refuses a read-only token acting on a read-write session's worker where no
// tool is checked: answering the worker's request (an elicitation's "accept" decides a write),
// the GET stream (where it asks) and the session's end (which drops uncommitted work). The
// challenge asks for the write scope. nil when the token is not narrower than the session.
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

// cancelsReadOnlyCall: msg cancels a call made with read-only access, which a read-only
// token may do.
func (s *session) cancelsReadOnlyCall(msg *jsonrpc.Message, f clientFields) bool {
	if msg.Method != "notifications/cancelled" || f.cancelID == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	inf := s.calls[string(f.cancelID)]
	return inf != nil && inf.readOnly
}
