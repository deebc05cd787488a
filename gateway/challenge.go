package gateway

import (
	"strings"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/policy"
)

// decide is the access of the token p: its scopes, and what rules read of its claims.
func (g *Gateway) decide(p auth.Principal) policy.Access {
	return g.opts.Policy.DecideToken(policy.Token{Subject: p.Subject, User: p.User, Scopes: p.Scopes, Claims: p.Claims()})
}

// forbiddenChallenge is what the 403 for a tool the policy forbids asks for, and why: the
// scopes any one of which unlocks the tool (unlockingScopes) and, when the token is
// read-only and the tool changes state, the write scope too. Both go in the one challenge:
// 2026-07-28 asks a server to name every scope the operation needs at once, since a client
// that asks for the rule's scope alone would only be refused again for the write scope. The
// caller's granted scopes are added by the challenge itself (insufficientScope). None when
// no scope would unlock the tool.
func (g *Gateway) forbiddenChallenge(k policy.Kind, access policy.Access, tool string, hint *policy.Hints) (needed []string, why string) {
	needed = g.unlockingScopes(k, access, tool, hint)
	if len(needed) == 0 {
		return nil, ""
	}
	why = k.String() + " " + quoteSafe(tool) + " needs scope " + strings.Join(needed, " or ")
	if access.ReadOnly {
		unlocked := g.opts.Policy.WithScope(access, needed[0])
		unlocked.ReadOnly = true
		if v, _ := g.opts.Policy.ExplainKind(k, unlocked, tool, hint); v == policy.DeniedReadOnly {
			write := g.opts.Policy.WriteScope()
			needed = append(needed, write)
			why += ", and scope " + write + " since it can change state"
		}
	}
	return needed, why
}
