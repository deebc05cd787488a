package policy

import (
	"fmt"
	"testing"
)

// A rule that reads nothing of the item (its name, URI or annotations) but only the token
// (groups, claims, scopes) has one outcome for every item of a list: FilterList evaluates it
// once per list, not once per item. Evaluated per item, a rule over a token's 1,000 groups
// cost a tools/list of 100 tools 100 evaluations (twice that for a read-only token), each
// bounded by the cost limit but together a tenth of a second of CPU and more for one request,
// which any holder of such a token could repeat.
func TestFilterListEvaluatesAnItemBlindRuleOnce(t *testing.T) {
	list := realisticToolsList(100)
	groups := func(n int) map[string]any {
		g := make([]any, n)
		for i := range g {
			g[i] = fmt.Sprintf("grp-%04d", i)
		}
		return map[string]any{"groups": g}
	}
	p := mustNew(t, Config{ReadOnlyTools: []string{"*"}, Rules: []Rule{{Name: "r", Allow: `groups.exists(g, g.startsWith("eng-"))`}}})
	for _, scopes := range [][]string{{"mcp:use", "mcp:write"}, {"mcp:use"}} {
		few := p.DecideToken(Token{Subject: "s", Scopes: scopes, Claims: groups(10)})
		many := p.DecideToken(Token{Subject: "s", Scopes: scopes, Claims: groups(1000)})
		filter := func(a Access) float64 {
			return testing.AllocsPerRun(2, func() {
				if _, _, err := p.FilterList("tools/list", a, list); err != nil {
					t.Fatal(err)
				}
			})
		}
		one := testing.AllocsPerRun(2, func() { p.ExplainKind(KindTool, many, "t", nil) })
		if extra := filter(many) - filter(few); extra > 3*one {
			t.Errorf("scopes %v: a tools/list of 100 tools allocates %.0f more for a token of 1,000 groups than for one of 10, one evaluation of the rule %.0f: the rule is evaluated per tool", scopes, extra, one)
		}
	}
}

// A rule that reads the item, however it reaches it, is evaluated for each item of a list.
func TestFilterListEvaluatesARuleReadingTheItemPerItem(t *testing.T) {
	list := realisticToolsList(12)
	for _, allow := range []string{
		`tool.endsWith("_001") || "x" in groups`,
		`[tool].exists(t, t.endsWith("_001"))`,
		`groups.size() == 0 && {"n": tool}.n.endsWith("_001")`,
		`claims.size() >= 0 ? tool in ["find_thing_001"] : false`,
	} {
		p := mustNew(t, Config{Rules: []Rule{{Name: "r", Allow: allow}}})
		a := p.DecideToken(Token{Subject: "s", Scopes: []string{"mcp:use", "mcp:write"}})
		out, _, err := p.FilterList("tools/list", a, list)
		if err != nil {
			t.Fatal(err)
		}
		names, _, err := ListNames("tools/list", out)
		if err != nil || len(names) != 1 || names[0] != "find_thing_001" {
			t.Errorf("allow %s: FilterList kept %v (%v), want find_thing_001 only", allow, names, err)
		}
	}
}
