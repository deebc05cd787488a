package gateway

import (
	"slices"
	"strings"

	"github.com/gemgate/gemgate/policy"
)

// forbiddenChallenge is what the 403 for a tool the policy forbids asks for, and why: the
// scopes any one of which unlocks the tool (unlockingScopes) and, when the token is
// read-only and the tool changes state, the write scope too. Both go in the one challenge:
// 2026-07-28 asks a server to name every scope the operation needs at once, since a client
// that asks for the rule's scope alone would only be refused again for the write scope. The
// caller's granted scopes are added by the challenge itself (insufficientScope).
func (g *Gateway) forbiddenChallenge(access policy.Access, tool string, hint *bool) (needed []string, why string) {
	needed = g.unlockingScopes(access, tool, hint)
	if len(needed) == 0 {
		return nil, "tool " + quoteSafe(tool) + " is not allowed for this token"
	}
	why = "tool " + quoteSafe(tool) + " needs scope " + strings.Join(needed, " or ")
	if access.ReadOnly {
		unlocked := g.opts.Policy.Decide(append(slices.Clip(access.Granted()), needed[0]))
		unlocked.ReadOnly = true
		if g.opts.Policy.CheckTool(unlocked, tool, hint) == policy.DeniedReadOnly {
			write := g.opts.Policy.WriteScope()
			needed = append(needed, write)
			why += ", and scope " + write + " since it can change state"
		}
	}
	return needed, why
}
