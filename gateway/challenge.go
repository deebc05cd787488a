package gateway

import (
	"strings"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/policy"
)

func (g *Gateway) decide(p auth.Principal) policy.Access {
	return g.opts.Policy.DecideToken(policy.Token{Subject: p.Subject, User: p.User, Scopes: p.Scopes, Claims: p.Claims()})
}

// forbiddenChallenge is what the 403 for a forbidden tool asks for, and why: the scopes any
// one of which unlocks it, and the write scope too for a read-only token on a tool that
// changes state (2026-07-28 asks for every needed scope at once). None when nothing unlocks it.
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
