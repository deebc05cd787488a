package gateway

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/policy"
)

// The count of tools a read-only token is shown and hidden, made at each of its tools/list
// answers (for the log line said once per worker), costs what the list's filter costs: a rule
// that reads nothing of the tool (only the token's groups, say) is evaluated once per list, not
// twice per tool, which on a token of 1,000 groups and a list of 100 tools was 200 evaluations
// of it for every tools/list of a read-only token.
func TestHiddenToolsCountEvaluatesAToolBlindRuleOnce(t *testing.T) {
	var tools []string
	for i := range 100 {
		tools = append(tools, fmt.Sprintf(`{"name":"tool_%03d","inputSchema":{"type":"object"}}`, i))
	}
	result := []byte(`{"tools":[` + strings.Join(tools, ",") + `]}`)
	pol, err := policy.New(policy.Config{ReadOnlyTools: []string{"tool_00*"},
		Rules: []policy.Rule{{Name: "r", Allow: `groups.exists(g, g.startsWith("eng-"))`}}})
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{opts: Options{Policy: pol}}
	access := func(n int) policy.Access {
		groups := make([]any, n)
		for i := range groups {
			groups[i] = fmt.Sprintf("grp-%04d", i)
		}
		return pol.DecideToken(policy.Token{Subject: "s", Scopes: []string{"mcp:use"}, Claims: map[string]any{"groups": groups}})
	}
	few, many := access(10), access(1000)
	count := func(a policy.Access) float64 {
		return testing.AllocsPerRun(2, func() { g.hiddenTools(a, result, nil) })
	}
	one := testing.AllocsPerRun(2, func() { pol.ExplainKind(policy.KindTool, many, "tool_001", nil) })
	if extra := count(many) - count(few); extra > 3*one {
		t.Errorf("counting a read-only token's hidden tools of a list of 100 allocates %.0f more for a token of 1,000 groups than for one of 10, one decision of a tool %.0f: the rule is evaluated per tool", extra, one)
	}
}
