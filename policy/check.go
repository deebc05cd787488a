package policy

// CheckTool decides whether a may list and call the tool name. readOnlyHint is the tool's
// annotations.readOnlyHint as the worker reported it, or nil when unknown.
//
// Rules come first: if any rule's tools match name, a must hold the scope of at least one
// matching rule, else DeniedForbidden. A tool no rule mentions is not restricted by rules.
// Then read-only: a read-only access may use only tools matching ReadOnlyTools, or tools
// hinted read-only when the operator trusts hints; everything else is DeniedReadOnly.
//
// An undecided Access, one missing a required scope, or an empty name is DeniedForbidden.
func (p *Policy) CheckTool(a Access, name string, readOnlyHint *bool) Verdict {
	if !a.decided || len(a.missing) > 0 || name == "" {
		return DeniedForbidden
	}
	mentioned, unlocked := false, false
	for _, r := range p.rules {
		if r.tools.match(name) {
			mentioned = true
			if a.HasScope(r.scope) {
				unlocked = true
				break
			}
		}
	}
	if mentioned && !unlocked {
		return DeniedForbidden
	}
	if !a.ReadOnly {
		return Allowed
	}
	if p.readOnlyTools.match(name) {
		return Allowed
	}
	if p.trustHints && readOnlyHint != nil && *readOnlyHint {
		return Allowed
	}
	return DeniedReadOnly
}
