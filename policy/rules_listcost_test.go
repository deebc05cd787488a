package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A rule that reads nothing of the item (its name, URI or annotations) but only the token
// (groups, claims, scopes) has one outcome for every item of a list: FilterList evaluates it
// once per list, not once per item. Evaluated per item, a rule over a token's 1,000 groups
// cost a tools/list of 100 tools 100 evaluations (twice that for a read-only token), each
// bounded by the cost limit but together a tenth of a second of CPU and more for one request,
// which any holder of such a token could repeat. The counts of a read-only token's shown and
// hidden tools (for the log line said once per worker) come from the same pass, tools the
// read-only gate hides (read_only_tools of a few) among them.
func TestFilterListEvaluatesAnItemBlindRuleOnce(t *testing.T) {
	list := realisticToolsList(100)
	groups := func(n int) map[string]any {
		g := make([]any, n)
		for i := range g {
			g[i] = fmt.Sprintf("grp-%04d", i)
		}
		return map[string]any{"groups": g}
	}
	for _, safe := range []string{"*", "list_thing_00*"} {
		p := mustNew(t, Config{ReadOnlyTools: []string{safe}, Rules: []Rule{{Name: "r", Allow: `groups.exists(g, g.startsWith("eng-"))`}}})
		for _, scopes := range [][]string{{"mcp:use", "mcp:write"}, {"mcp:use"}} {
			few := p.DecideToken(Token{Subject: "s", Scopes: scopes, Claims: groups(10)})
			many := p.DecideToken(Token{Subject: "s", Scopes: scopes, Claims: groups(1000)})
			filter := func(a Access) float64 {
				return testing.AllocsPerRun(2, func() {
					if _, _, _, err := p.FilterList("tools/list", a, list); err != nil {
						t.Fatal(err)
					}
				})
			}
			one := testing.AllocsPerRun(2, func() { p.ExplainKind(KindTool, many, "t", nil) })
			if extra := filter(many) - filter(few); extra > 3*one {
				t.Errorf("read_only_tools %s, scopes %v: a tools/list of 100 tools allocates %.0f more for a token of 1,000 groups than for one of 10, one evaluation of the rule %.0f: the rule is evaluated per tool", safe, scopes, extra, one)
			}
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
		out, _, _, err := p.FilterList("tools/list", a, list)
		if err != nil {
			t.Fatal(err)
		}
		names, _, err := ListNames("tools/list", out)
		if err != nil || len(names) != 1 || names[0] != "find_thing_001" {
			t.Errorf("allow %s: FilterList kept %v (%v), want find_thing_001 only", allow, names, err)
		}
	}
}

// FuzzFilterListDecidesAsExplainKind: whatever a rule's allow expression (that compiles) and
// whatever the listed names, FilterList keeps exactly the items ExplainKind allows one by one,
// though it evaluates a rule it takes to read nothing of the item once per list.
func FuzzFilterListDecidesAsExplainKind(f *testing.F) {
	for _, allow := range []string{
		`tool.endsWith("_1") || "x" in groups`,
		`[tool].exists(t, t.endsWith("_1"))`,
		`groups.exists(g, g == tool)`,
		`"eng" in groups`,
		`claims.size() > 1 ? tool.size() > 3 : read_only`,
		`{"k": tool}.k == "a_1"`,
		`groups.exists(tool, tool == "eng")`,
		`annotations.readOnlyHint || tool == "b"`,
	} {
		f.Add(allow, "a_1,b,eng,c_22", "eng,ops", false)
		f.Add(allow, "a_1,b,eng,c_22", "", true)
	}
	f.Fuzz(func(t *testing.T, allow, names, groups string, readOnly bool) {
		p, err := New(Config{TrustReadOnlyHints: true, ReadOnlyTools: []string{"a_*", "eng"},
			Rules: []Rule{{Name: "r", Allow: allow}, {Name: "s", Tools: []string{"c_*"}, Allow: `"ops" in groups`}}})
		if err != nil {
			return
		}
		scopes := "mcp:use mcp:write"
		if readOnly {
			scopes = "mcp:use"
		}
		var g []any
		for _, s := range strings.Split(groups, ",") {
			g = append(g, s)
		}
		a := p.DecideToken(tok(scopes, map[string]any{"groups": g}))
		var items []string
		for i, n := range strings.Split(names, ",") {
			if n == "" {
				continue
			}
			b, _ := json.Marshal(n)
			items = append(items, fmt.Sprintf(`{"name":%s,"annotations":{"readOnlyHint":%t}}`, b, i%2 == 0))
		}
		list := []byte(`{"tools":[` + strings.Join(items, ",") + `]}`)
		out, hints, _, err := p.FilterList("tools/list", a, list)
		if err != nil {
			return
		}
		all, _, _ := ListNames("tools/list", list)
		var want []string
		for _, n := range all {
			if v, _ := p.ExplainKind(KindTool, a, n, HintOf(hints, n)); v == Allowed {
				want = append(want, n)
			}
		}
		got, _, _ := ListNames("tools/list", out)
		if !slices.Equal(got, want) {
			t.Fatalf("allow %q, groups %q, read-only %v: FilterList kept %q, ExplainKind allows %q", allow, groups, readOnly, got, want)
		}
	})
}
