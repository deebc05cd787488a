package policy

import (
	"fmt"
	"strings"
	"testing"
)

// A rule's regular expression is compiled once, by New, not at every evaluation: a rule such
// as 'groups.exists(g, g.matches("^(eng|ops)-admins$"))' is evaluated for each tool of every
// tools/list, on a token that may carry thousands of groups, and a compilation per group made
// one evaluation over 1,500 groups cost about 19 ms (a tools/list of 50 tools, a second of CPU
// for one request), far more than the cost limit meant to allow. Such a rule allocates about
// what the same rule with startsWith does, not a regexp per group.
func TestRuleRegexIsCompiledOnce(t *testing.T) {
	groups := make([]any, 1000)
	for i := range groups {
		groups[i] = fmt.Sprintf("grp-%04d", i)
	}
	allocs := func(allow string) float64 {
		p := mustNew(t, Config{Rules: []Rule{{Name: "r", Allow: allow}}})
		a := p.DecideToken(Token{Subject: "s", Scopes: []string{"mcp:use", "mcp:write"}, Claims: map[string]any{"groups": groups}})
		if v, _ := p.ExplainKind(KindTool, a, "t", nil); v != DeniedForbidden {
			t.Fatalf("%s: %v, want forbidden (no group matches)", allow, v)
		}
		return testing.AllocsPerRun(3, func() { p.ExplainKind(KindTool, a, "t", nil) })
	}
	prefix := allocs(`groups.exists(g, g.startsWith("eng-admins"))`)
	regex := allocs(`groups.exists(g, g.matches("^(eng|ops)-admins$"))`)
	if regex > 1.5*prefix {
		t.Errorf("a rule matching a constant regexp over %d groups allocates %.0f times per evaluation, the same rule with startsWith %.0f: the regexp is compiled at each evaluation", len(groups), regex, prefix)
	}
}

// A constant regular expression that does not compile is refused by New, with the rule's
// place, as any rule that cannot work is: it would deny every token, whatever it carried.
func TestRuleBadRegexIsACompileError(t *testing.T) {
	_, err := New(Config{Rules: []Rule{{Name: "r", Allow: `sub.matches("[")`}}})
	if err == nil || !strings.Contains(err.Error(), "rules[0] (r).allow") {
		t.Errorf("New with a rule matching the regexp \"[\": %v; want the rule's compile error", err)
	}
}
