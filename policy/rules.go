package policy

import (
	"fmt"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"
)

// Rule restricts tools. A rule applies to the tools whose names match Tools (every tool
// when Tools is empty); such a tool may be listed and called only with Scope granted (when
// set) and when Allow, a CEL expression, is true (when set). Every rule that applies must
// pass: a rule only takes away, never gives, and none lifts the read-only gate.
type Rule struct {
	Name  string   // named in audit lines and check output; "rules[i]" when empty
	Tools []string // tool names or path.Match globs; empty means every tool
	Scope string
	// Allow reads the variables ruleEnv declares. It is compiled and type-checked in New;
	// an evaluation that fails (a missing claim, a wrong type, the cost limit) denies.
	Allow string
}

type rule struct {
	name  string
	tools *matcher // nil: every tool
	scope string
	allow cel.Program
}

// ruleCostLimit bounds one evaluation (CEL's cost units, about one per operation), so a rule
// over a long claim cannot hold a request: far above what a readable rule costs.
const ruleCostLimit = 100_000

// ruleEnv declares what a rule may read: the tool's name, the session's access mode, the
// token's subject, user, scopes, groups and roles, and every claim by name; the tool's
// annotations only when the operator trusts hints, so that a rule that reads them without
// that trust does not compile.
func ruleEnv(trustHints bool) (*cel.Env, error) {
	strs := cel.ListType(cel.StringType)
	opts := []cel.EnvOption{
		cel.Variable("tool", cel.StringType),
		cel.Variable("read_only", cel.BoolType),
		cel.Variable("sub", cel.StringType),
		cel.Variable("user", cel.StringType),
		cel.Variable("scopes", strs),
		cel.Variable("groups", strs),
		cel.Variable("roles", strs),
		cel.Variable("claims", cel.MapType(cel.StringType, cel.DynType)),
	}
	if trustHints {
		opts = append(opts, cel.Variable("annotations", cel.MapType(cel.StringType, cel.BoolType)))
	}
	return cel.NewEnv(opts...)
}

// compileRule checks r and builds it; what is wrong is said with the rule's place and, for
// Allow, CEL's message with the line and column.
func compileRule(env *cel.Env, i int, r Rule) (rule, []error) {
	out := rule{name: r.Name, scope: r.Scope}
	where := fmt.Sprintf("rules[%d]", i)
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
	for j, pat := range r.Tools {
		if err := checkPattern(pat); err != nil {
			bad(".tools[%d] %q: %v", j, pat, err)
		}
	}
	if len(r.Tools) > 0 {
		m := newMatcher(r.Tools)
		out.tools = &m
	}
	if r.Allow != "" {
		ast, iss := env.Compile(r.Allow)
		switch {
		case iss.Err() != nil:
			bad(".allow: %v", iss.Err())
		case ast.OutputType() != cel.BoolType:
			bad(".allow: is a %v, not a bool", ast.OutputType())
		default:
			prg, err := env.Program(ast, cel.CostLimit(ruleCostLimit))
			if err != nil {
				bad(".allow: %v", err)
			}
			out.allow = prg
		}
	}
	return out, errs
}

// applies reports whether r restricts the tool name.
func (r *rule) applies(name string) bool { return r.tools == nil || r.tools.match(name) }

// passes evaluates r for a on tool name. Any failure of the expression denies.
func (r *rule) passes(p *Policy, a Access, name string, h *Hints) bool {
	if r.scope != "" && !a.HasScope(r.scope) {
		return false
	}
	if r.allow == nil {
		return true
	}
	out, _, err := r.allow.Eval(a.ruleVars(p, name, h))
	return err == nil && out == types.True
}

// ruleVars binds the variables of ruleEnv for a on tool name.
func (a Access) ruleVars(p *Policy, name string, h *Hints) interpreter.Activation {
	tok := a.tok
	if tok == nil {
		tok = &token{}
	}
	vars := map[string]any{
		"tool": name, "read_only": a.ReadOnly, "sub": tok.sub, "user": tok.user,
		"scopes": a.granted, "groups": tok.groups, "roles": tok.roles, "claims": tok.claims,
	}
	if p.trustHints {
		if h == nil {
			h = &defaultHints
		}
		vars["annotations"] = h.celMap()
	}
	act, _ := interpreter.NewActivation(vars) // a map is always a valid activation
	return act
}
