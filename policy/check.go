package policy

// CheckTool decides whether a may list and call the tool name. h are the annotations the
// worker declared for it, or nil when unknown. See [Policy.Explain].
func (p *Policy) CheckTool(a Access, name string, h *Hints) Verdict {
	v, _ := p.Explain(a, name, h)
	return v
}

// Explain is CheckTool with what decided: a rule's name, or the read-only gate's reason.
//
// The read-only gate is decided first and no rule can lift it: a read-only access may use
// only tools matching ReadOnlyTools, or tools hinted read-only when the operator trusts
// hints; everything else is DeniedReadOnly. Then every rule that applies to name must pass,
// else DeniedForbidden (reported before DeniedReadOnly, so that a refusal's challenge can
// name both the rule's scope and the write scope).
//
// An undecided Access, one missing a required scope, or an empty name is DeniedForbidden.
func (p *Policy) Explain(a Access, name string, h *Hints) (Verdict, string) {
	if !a.decided || len(a.missing) > 0 || name == "" {
		return DeniedForbidden, "the token lacks a required scope"
	}
	verdict, why := p.readOnlyGate(a, name, h)
	for i := range p.rules {
		r := &p.rules[i]
		if r.applies(name) && !r.passes(p, a, name, h) {
			return DeniedForbidden, "rule " + r.name
		}
	}
	return verdict, why
}

func (p *Policy) readOnlyGate(a Access, name string, h *Hints) (Verdict, string) {
	switch {
	case !a.ReadOnly:
		return Allowed, "read-write token"
	case p.readOnlyTools.match(name):
		return Allowed, "read_only_tools"
	case p.trustHints && h != nil && h.ReadOnly:
		return Allowed, "trusted readOnlyHint"
	}
	return DeniedReadOnly, "read-only: not vouched read-only"
}
