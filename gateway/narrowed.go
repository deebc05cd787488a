package gateway

import (
	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/gateway/wire"
	textclip "github.com/gemgate/gemgate/internal/clip"
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

// readingMethods are the requests a read-only token may send a read-write session's worker:
// tools/call, which the tool gate decides, and those that read or concern only their caller.
// Any other (tasks/cancel, which cancels a call as notifications/cancelled does, or a method MCP
// does not name, which the worker may take for a write) is narrowedRequest's to refuse.
var readingMethods = map[string]bool{
	"ping": true, "tools/list": true, "tools/call": true, "prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true, "completion/complete": true,
	"logging/setLevel": true, "tasks/get": true, "tasks/list": true, "tasks/result": true,
}

// narrowedRequest refuses a read-only token's request on a read-write session that is not one
// of readingMethods, and its every tools/call where the worker keeps the user's login
// (GemStone): there what makes a tool safe for a read-only token is a login whose commits are
// disabled, and this session's login may commit.
func (g *Gateway) narrowedRequest(s *session, p auth.Principal, msg *jsonrpc.Message) *wire.Error {
	if readingMethods[msg.Method] && (msg.Method != "tools/call" || !g.pool.KeepsLogin()) {
		return nil
	}
	he := g.narrowedRefusal(s, p, "the request "+textclip.Quote(msg.Method))
	if he != nil {
		he.ID = msg.ID
	}
	return he
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
