package policy

import (
	"fmt"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"
)

// Rule restricts tools, prompts or resources, by the list it is in (Config.Rules,
// PromptRules, ResourceRules). A tool rule applies to the tools whose names match Tools
// (every tool when Tools is empty); such a tool may be listed and called only with Scope
// granted (when set) and when Allow, a CEL expression, is true (when set). A prompt rule
// does that for the prompts named in Prompts, a resource rule for the resources (and
// resource templates) whose URIs match URIs. Every rule that applies must pass: a rule only
// takes away, never gives, and none lifts the read-only gate.
type Rule struct {
	Name    string   // named in audit lines and check output; "rules[i]" when empty
	Tools   []string // tool rules: tool names or path.Match globs; empty means every tool
	Prompts []string // prompt rules: prompt names or globs; empty means every prompt
	URIs    []string // resource rules: URIs or globs (a * stops at "/"); empty means every resource
	Scope   string
	// Allow reads the variables ruleEnv declares. It is compiled and type-checked in New;
	// an evaluation that fails (a missing claim, a wrong type, the cost limit) denies.
	Allow string
}

type rule struct {
	name        string
	kind        Kind
	match       *matcher // nil: every tool, prompt or resource
	scope       string
	allow       cel.Program
	annotations bool // allow reads the annotations variable
	blind       bool // allow reads nothing of the item (its name, URI, annotations): one outcome per access
}

// ruleCostLimit bounds one evaluation (CEL's cost units, about one per operation), so a rule
// over a long claim cannot hold a request: far above what a readable rule costs.
const ruleCostLimit = 100_000

// ruleEnv declares what a rule of kind k may read: the tool's or prompt's name or the
// resource's URI (tool, prompt, uri), the session's access mode, the token's subject, user,
// scopes, groups and roles, and every claim by name; a tool's annotations only when the
// operator trusts hints, so that a rule that reads them without that trust, or a prompt or
// resource rule that reads them, does not compile.
func ruleEnv(k Kind, trustHints bool) (*cel.Env, error) {
	strs := cel.ListType(cel.StringType)
	opts := []cel.EnvOption{
		cel.Variable(kindNames[k].variable, cel.StringType),
		cel.Variable("read_only", cel.BoolType),
		cel.Variable("sub", cel.StringType),
		cel.Variable("user", cel.StringType),
		cel.Variable("scopes", strs),
		cel.Variable("groups", strs),
		cel.Variable("roles", strs),
		cel.Variable("claims", cel.MapType(cel.StringType, cel.DynType)),
	}
	if trustHints && k == KindTool {
		opts = append(opts, cel.Variable("annotations", cel.MapType(cel.StringType, cel.BoolType)))
	}
	return cel.NewEnv(opts...)
}

// compileRule checks r, a rule of kind k, and builds it; what is wrong is said with the
// rule's place and, for Allow, CEL's message with the line and column.
func compileRule(env *cel.Env, k Kind, i int, r Rule) (rule, []error) {
	out := rule{name: r.Name, kind: k, scope: r.Scope}
	where := fmt.Sprintf("rules[%d]", i)
	if k != KindTool {
		where = kindNames[k].key + where[len("rules"):]
	}
	if out.name == "" {
		out.name = where
	} else {
		where += " (" + r.Name + ")"
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("policy: "+where+format, args...))
	}
	if r.Scope == "" && r.Allow == "" {
		bad(": neither scope nor allow, so it would restrict nothing")
	}
	if r.Scope != "" {
		if err := checkScope(r.Scope); err != nil {
			bad(".scope %q: %v", r.Scope, err)
		} else if r.Scope == offlineAccess {
			bad(".scope: %s is not a resource scope", r.Scope)
		}
	}
	selectors := [Kinds][]string{r.Tools, r.Prompts, r.URIs}
	for other, sel := range selectors {
		if Kind(other) != k && len(sel) > 0 {
			bad(": %s is not a key of %s", kindNames[other].selector, kindNames[k].key)
		}
	}
	for j, pat := range selectors[k] {
		if err := checkPattern(pat); err != nil {
			bad(".%s[%d] %q: %v", kindNames[k].selector, j, pat, err)
		}
	}
	if len(selectors[k]) > 0 {
		m := newMatcher(selectors[k])
		out.match = &m
	}
	if r.Allow != "" {
		ast, iss := env.Compile(r.Allow)
		switch {
		case iss.Err() != nil:
			bad(".allow: %v", iss.Err())
		case ast.OutputType() != cel.BoolType:
			bad(".allow: is a %v, not a bool", ast.OutputType())
		default:
			// OptOptimize compiles a constant regexp (matches) here, once, not at every
			// evaluation (one per group of a groups.exists(...)); one that does not compile
			// is this rule's error.
			prg, err := env.Program(ast, cel.CostLimit(ruleCostLimit), cel.EvalOptions(cel.OptOptimize))
			if err != nil {
				bad(".allow: %v", err)
			}
			out.allow = prg
			item := false
			for _, ref := range ast.NativeRep().ReferenceMap() {
				out.annotations = out.annotations || ref.Name == "annotations"
				item = item || ref.Name == kindNames[k].variable
			}
			out.blind = !item && !out.annotations
		}
	}
	return out, errs
}

// applies reports whether r restricts the tool, prompt or resource name.
func (r *rule) applies(name string) bool { return r.match == nil || r.match.match(name) }

// passes evaluates r for a on name (a tool's, a prompt's, a resource's URI). Any failure of
// the expression denies.
func (r *rule) passes(p *Policy, a Access, name string, h *Hints) bool {
	if r.scope != "" && !a.HasScope(r.scope) {
		return false
	}
	if r.allow == nil {
		return true
	}
	out, _, err := r.allow.Eval(a.ruleVars(p, r.kind, name, h))
	return err == nil && out == types.True
}

// passesKnown is passes, for a blind rule the outcome known holds, else evaluated and kept
// there (when known is not nil): the same for every item.
func (r *rule) passesKnown(p *Policy, a Access, name string, h *Hints, known map[*rule]bool) bool {
	if known == nil || !r.blind || r.allow == nil {
		return r.passes(p, a, name, h)
	}
	ok, seen := known[r]
	if !seen {
		ok = r.passes(p, a, name, h)
		known[r] = ok
	}
	return ok
}

// ruleVars binds the variables of ruleEnv(k) for a on name.
func (a Access) ruleVars(p *Policy, k Kind, name string, h *Hints) interpreter.Activation {
	tok := a.tok
	if tok == nil {
		tok = &token{}
	}
	vars := map[string]any{
		kindNames[k].variable: name, "read_only": a.ReadOnly, "sub": tok.sub, "user": tok.user,
		"scopes": a.granted, "groups": tok.groups, "roles": tok.roles, "claims": tok.claims,
	}
	if p.trustHints && k == KindTool {
		if h == nil {
			h = &defaultHints
		}
		vars["annotations"] = h.celMap()
	}
	act, _ := interpreter.NewActivation(vars) // a map is always a valid activation
	return act
}
