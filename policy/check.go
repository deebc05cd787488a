package policy

import "slices"

// CheckTool decides whether a may list and call the tool name. h are the annotations the
// worker declared for it, or nil when unknown. See [Policy.ExplainKind].
func (p *Policy) CheckTool(a Access, name string, h *Hints) Verdict {
	v, _ := p.ExplainKind(KindTool, a, name, h)
	return v
}

// ExplainKind decides whether a may list and use the tool, prompt (name is its name) or
// resource (name is its URI, or a resource template's URI template in a list) of kind k, and
// says what decided: a rule's name, or the read-only gate's reason.
//
// For a tool the read-only gate is decided first and no rule can lift it: a read-only
// access may use only tools matching ReadOnlyTools, or tools hinted read-only (h, the
// worker's annotations, nil when unknown) when the operator trusts hints; everything else is
// DeniedReadOnly. Then every rule that applies to name must pass, else DeniedForbidden
// (reported before DeniedReadOnly, so that a refusal's challenge can name both the rule's
// scope and the write scope) - unless the write scope alone would let a use it (a rule that
// reads read_only), which is DeniedReadOnly naming the rule. A prompt or a resource has no
// read-only gate: reading one is not a change, so a read-only access keeps every prompt and
// resource that no rule of its kind takes away.
//
// An undecided Access, one missing a required scope, or an empty name is DeniedForbidden.
func (p *Policy) ExplainKind(k Kind, a Access, name string, h *Hints) (Verdict, string) {
	return p.explain(k, a, name, h, nil)
}

// known are the outcomes of the rules that read nothing of the item (rule.blind), once each, for
// an access and for it with the write scope: the same for every item of a list (FilterList).
type known [2]map[*rule]bool

// explain is ExplainKind with kn, where the outcomes of the blind rules are kept: FilterList's,
// which a list's items share, or nil (none kept).
func (p *Policy) explain(k Kind, a Access, name string, h *Hints, kn *known) (Verdict, string) {
	if !a.decided || len(a.missing) > 0 || name == "" {
		return DeniedForbidden, "the token lacks a required scope"
	}
	verdict, why := Allowed, "reading is not a change"
	if k == KindTool {
		verdict, why = p.readOnlyGate(a, name, h)
	}
	var mine, wider map[*rule]bool
	if kn != nil {
		mine, wider = kn[0], kn[1]
	}
	r := p.failing(k, a, name, h, mine)
	switch {
	case r == nil:
		return verdict, why
	case a.ReadOnly && p.failing(k, p.WithScope(a, p.write), name, h, wider) == nil:
		return DeniedReadOnly, "rule " + r.name
	}
	return DeniedForbidden, "rule " + r.name
}

// failing is the first rule of kind k that applies to name and does not pass for a; nil
// when every one passes. A resource's URI is decided on as it is and as a worker may read it
// (uriReadings): so file:///hr/pay.txt?/ is not out of reach of a rule on file:///hr/*, nor
// #x of a rule on one URI. The outcome of a blind rule is taken from known when it holds it,
// and kept there when known is not nil.
func (p *Policy) failing(k Kind, a Access, name string, h *Hints, known map[*rule]bool) *rule {
	names := []string{name}
	if k == KindResource && len(p.rules[k]) > 0 { // without a rule, nothing reads them
		names = uriReadings(name)
	}
	for i := range p.rules[k] {
		r := &p.rules[k][i]
		for _, n := range names {
			if r.applies(n) && !r.passesKnown(p, a, n, h, known) {
				return r
			}
		}
	}
	return nil
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

// ReadsAnnotations reports whether a tool rule reads the tool's annotations. Decided without
// them (h nil), such a rule reads MCP's defaults, which hold for a tool listed without
// annotations; a caller that does not know how the worker lists the tool must look it up
// before it lets the tool be used.
func (p *Policy) ReadsAnnotations() bool {
	return slices.ContainsFunc(p.rules[KindTool], func(r rule) bool { return r.annotations })
}
