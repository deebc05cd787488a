package gateway

import (
	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
)

// narrowedRefusal refuses a read-only token on a read-write session where no tool is checked:
// answering the worker (an "accept" may decide a write), its GET stream, DELETE.
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

// cancelsReadOnlyCall: msg cancels a call made with read-only access.
func (s *session) cancelsReadOnlyCall(msg *jsonrpc.Message, f clientFields) bool {
	if msg.Method != "notifications/cancelled" || f.cancelID == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	inf := s.calls[string(f.cancelID)]
	return inf != nil && inf.readOnly
}
