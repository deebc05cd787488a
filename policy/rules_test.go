package policy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// rulesPolicy has one rule of each kind the docs show: a group's write access, a tool only
// for one role, destructive tools only with a second scope.
func rulesPolicy(t testing.TB) *Policy {
	return mustNew(t, Config{
		ReadOnlyTools:      []string{"list_*"},
		TrustReadOnlyHints: true,
		ExtraScopes:        []string{"notes:admin"},
		Rules: []Rule{
			{Name: "editors-write", Tools: []string{"write_*"}, Allow: `"editors" in groups`},
			{Name: "auditors-only", Tools: []string{"audit_log"}, Allow: `"auditor" in roles`},
			{Name: "destructive-second-scope", Allow: `annotations.readOnlyHint || !annotations.destructiveHint || "notes:admin" in scopes`},
			{Name: "claim-by-name", Tools: []string{"tenant_*"}, Allow: `claims.tenant == "acme" && user == "carol" && sub.startsWith("s-")`},
		},
	})
}

func tok(scopes string, claims map[string]any) Token {
	if claims == nil {
		claims = map[string]any{}
	}
	return Token{Subject: "s-1", User: "carol", Scopes: strings.Fields(scopes), Claims: claims}
}

func TestRules(t *testing.T) {
	p := rulesPolicy(t)
	safe := &Hints{Destructive: false, OpenWorld: true}
	destructive := &Hints{Destructive: true}
	readOnly := &Hints{ReadOnly: true, Destructive: true}
	editors := map[string]any{"groups": []any{"editors", 7}}
	auditor := map[string]any{"realm_access": map[string]any{"roles": []any{"auditor"}}}
	tests := []struct {
		name        string
		tok         Token
		tool        string
		h           *Hints
		want        Verdict
		wantDecider string
	}{
		{"group writes", tok("mcp:use mcp:write", editors), "write_note", safe, Allowed, "read-write token"},
		{"no group, no write", tok("mcp:use mcp:write", nil), "write_note", safe, DeniedForbidden, "rule editors-write"},
		{"group as a string claim", tok("mcp:use mcp:write", map[string]any{"groups": "editors"}), "write_note", safe, Allowed, "read-write token"},
		{"group of another shape counts as none", tok("mcp:use mcp:write", map[string]any{"groups": map[string]any{"editors": true}}), "write_note", safe, DeniedForbidden, "rule editors-write"},
		{"group does not lift read-only", tok("mcp:use", editors), "write_note", safe, DeniedReadOnly, "read-only: not vouched read-only"},
		{"role from realm_access", tok("mcp:use mcp:write", auditor), "audit_log", safe, Allowed, "read-write token"},
		{"role from roles", tok("mcp:use mcp:write", map[string]any{"roles": []any{"auditor"}}), "audit_log", safe, Allowed, "read-write token"},
		{"no role", tok("mcp:use mcp:write", editors), "audit_log", safe, DeniedForbidden, "rule auditors-only"},
		{"destructive without second scope", tok("mcp:use mcp:write", nil), "drop", destructive, DeniedForbidden, "rule destructive-second-scope"},
		{"destructive with second scope", tok("mcp:use mcp:write notes:admin", nil), "drop", destructive, Allowed, "read-write token"},
		{"unknown hints are destructive", tok("mcp:use mcp:write", nil), "drop", nil, DeniedForbidden, "rule destructive-second-scope"},
		{"read-only hint passes", tok("mcp:use", nil), "peek", readOnly, Allowed, "trusted readOnlyHint"},
		{"claim by name", tok("mcp:use mcp:write", map[string]any{"tenant": "acme"}), "tenant_x", safe, Allowed, "read-write token"},
		{"claim of another value", tok("mcp:use mcp:write", map[string]any{"tenant": "other"}), "tenant_x", safe, DeniedForbidden, "rule claim-by-name"},
		{"missing claim fails and denies", tok("mcp:use mcp:write", nil), "tenant_x", safe, DeniedForbidden, "rule claim-by-name"},
		{"claim of a wrong type fails and denies", tok("mcp:use mcp:write", map[string]any{"tenant": 1.0}), "tenant_x", safe, DeniedForbidden, "rule claim-by-name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, why := p.ExplainKind(KindTool, p.DecideToken(tt.tok), tt.tool, tt.h)
			if v != tt.want || why != tt.wantDecider {
				t.Errorf("Explain = %v, %q; want %v, %q", v, why, tt.want, tt.wantDecider)
			}
		})
	}
}

// No rule lifts the read-only gate: rules that allow everything, that read the access mode
// and allow when it is read-only, or that throw, leave a read-only token's unvouched tool
// refused, whatever its claims and the tool's (untrusted) hints say.
func TestRulesCannotWidenReadOnly(t *testing.T) {
	for _, allow := range []string{`true`, `read_only`, `read_only || !read_only`, `claims.read_only == false || true`,
		`1/0 == 0`, `tool == tool`, `"mcp:write" in scopes || true`} {
		for _, trust := range []bool{false, true} {
			p := mustNew(t, Config{ReadOnlyTools: []string{"list_*"}, TrustReadOnlyHints: trust, Rules: []Rule{{Name: "open", Allow: allow}}})
			a := p.DecideToken(Token{Scopes: []string{"mcp:use"}, Claims: map[string]any{"scope": "mcp:use mcp:write", "read_only": false, "groups": []any{"admins"}}})
			for _, h := range []*Hints{nil, {Destructive: true}, {ReadOnly: !trust}} {
				if v := p.CheckTool(a, "write_note", h); v == Allowed {
					t.Errorf("allow %q, trust %v, hints %v: read-only token may call write_note", allow, trust, h)
				}
			}
		}
	}
}

func TestRuleCompileErrors(t *testing.T) {
	tests := []struct {
		name  string
		trust bool
		allow string
		want  string
	}{
		{"syntax, with the position", false, `"a" in`, `rules[0] (r).allow: ERROR: <input>:1:7: Syntax error`},
		{"unknown variable", false, `"a" in group`, `undeclared reference to 'group'`},
		{"annotations without trusted hints", false, `annotations.destructiveHint`, `undeclared reference to 'annotations'`},
		{"not a bool", false, `scopes`, `is a list(string), not a bool`},
		{"wrong types", true, `annotations.readOnlyHint == "yes"`, `no matching overload`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Config{TrustReadOnlyHints: tt.trust, Rules: []Rule{{Name: "r", Allow: tt.allow}}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v; want %q", err, tt.want)
			}
		})
	}
	if _, err := New(Config{TrustReadOnlyHints: true, Rules: []Rule{{Allow: `annotations.openWorldHint && annotations.idempotentHint`}}}); err != nil {
		t.Errorf("annotations with trusted hints: %v", err)
	}
}

// The rule's cost is bounded: one that would run long is stopped and denies.
func TestRuleCostLimitDenies(t *testing.T) {
	p := mustNew(t, Config{Rules: []Rule{{Name: "slow", Allow: `groups.all(a, groups.all(b, groups.all(c, a + b + c != "")))`}}})
	many := make([]any, 200)
	for i := range many {
		many[i] = strings.Repeat("g", i)
	}
	a := p.DecideToken(Token{Scopes: []string{"mcp:use", "mcp:write"}, Claims: map[string]any{"groups": many}})
	if v, why := p.ExplainKind(KindTool, a, "x", nil); v != DeniedForbidden || why != "rule slow" {
		t.Errorf("Explain = %v, %q; want forbidden by rule slow", v, why)
	}
	few := p.DecideToken(Token{Scopes: []string{"mcp:use", "mcp:write"}, Claims: map[string]any{"groups": many[1:4]}})
	if v := p.CheckTool(few, "x", nil); v != Allowed {
		t.Errorf("few groups: %v", v)
	}
}

func TestHiddenToolsSayWhy(t *testing.T) {
	p := rulesPolicy(t)
	list := `{"tools":[{"name":"write_note","annotations":{"destructiveHint":false}},{"name":"drop"}]}`
	out, _, _, err := p.FilterList("tools/list", p.DecideToken(tok("mcp:use", nil)), json.RawMessage(list))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Meta  map[string]map[string]string `json:"_meta"`
		Tools []any
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	why := res.Meta[HiddenMetaKey]["explanation"]
	for _, want := range []string{"hides all 2 tools", "rule editors-write", "rule destructive-second-scope"} {
		if !strings.Contains(why, want) || len(res.Tools) != 0 {
			t.Errorf("%s lacks %q", out, want)
		}
	}
	var b strings.Builder
	if err := p.ExplainTools(&b, p.DecideToken(tok("mcp:use mcp:write", map[string]any{"groups": []any{"editors"}})), json.RawMessage(list)); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.Contains(got, "ALLOWED  write_note") || !strings.Contains(got, "HIDDEN   drop") || !strings.Contains(got, "rule destructive-second-scope") {
		t.Errorf("ExplainTools:\n%s", got)
	}
}

// FuzzRules: tool names and annotations come from the worker, and so do what a rule reads
// of them. A rule over the name decides as the same test in Go would, and whatever the
// rule, a read-only access is allowed only what the read-only gate allows.
func FuzzRules(f *testing.F) {
	f.Add("write_note", true, false, "editors")
	f.Add("x\u00e9\x00", false, true, "")
	f.Add("", true, true, "a\"b")
	p := mustNew(f, Config{
		ReadOnlyTools: []string{"list_*"}, TrustReadOnlyHints: true,
		Rules: []Rule{{Name: "prefix", Allow: `!tool.startsWith("admin_") || tool.size() < 3 || tool in groups || annotations.readOnlyHint`}},
	})
	f.Fuzz(func(t *testing.T, name string, ro, destructive bool, group string) {
		h := &Hints{ReadOnly: ro, Destructive: destructive}
		for _, scopes := range [][]string{{"mcp:use"}, {"mcp:use", "mcp:write"}} {
			a := p.DecideToken(Token{Scopes: scopes, Claims: map[string]any{"groups": []any{group}}})
			got := p.CheckTool(a, name, h)
			gate, _ := p.readOnlyGate(a, name, h)
			rule := !strings.HasPrefix(name, "admin_") || len([]rune(name)) < 3 || name == group || ro
			want := gate
			if name == "" {
				want = DeniedForbidden
			} else if !rule {
				want = DeniedForbidden
			}
			if got != want {
				t.Fatalf("CheckTool(%q, ro=%v, group %q, scopes %v) = %v, want %v", name, ro, group, scopes, got, want)
			}
			if a.ReadOnly && got == Allowed && gate != Allowed {
				t.Fatalf("rule widened read-only for %q", name)
			}
		}
	})
}

// The explanation joins a _meta the worker sent, or stays out when that _meta is not an
// object; a list with a tool left keeps its exact bytes.
func TestHiddenMetaPlacement(t *testing.T) {
	p := mustNew(t, Config{})
	ro := decide(p, []string{"mcp:use"})
	why := `"gemgate/hidden":{"explanation":"gemgate hides all 1 tools the worker listed in this answer from this token: the token is read-only (no scope mcp:write) and the operator vouched for none of them (read_only_tools, trust_read_only_hints, or a preset from policy/presets)"}`
	for in, want := range map[string]string{
		`{"tools":[{"name":"x"}]}`:                        `{"_meta":{` + why + `},"tools":[]}`,
		`{"tools":[{"name":"x"}],"_meta":{}}`:             `{"tools":[],"_meta":{` + why + `}}`,
		`{"_meta": { "a":1 },"tools":[{"name":"x"}]}`:     `{"_meta": {` + why + `, "a":1 },"tools":[]}`,
		`{"tools":[{"name":"x"}],"_meta":null}`:           `{"tools":[],"_meta":null}`,
		`{"tools":[{"name":"x"}],"_meta":[1]}`:            `{"tools":[],"_meta":[1]}`,
		`{"tools":[{"name":"x"}],"_meta":{"k":1},"n":2} `: `{"tools":[],"_meta":{` + why + `,"k":1},"n":2} `,
	} {
		got, _, _, err := p.FilterList("tools/list", ro, json.RawMessage(in))
		if err != nil || string(got) != want || !json.Valid(got) {
			t.Errorf("FilterToolsList(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}

func TestRulesFromYAML(t *testing.T) {
	tests := []struct {
		in   string
		want []Rule
		err  string
	}{
		{"- name: a\n  tools: [x, \"y_*\"]\n  scope: s\n  allow: 'true'\n- allow: read_only\n",
			[]Rule{{Name: "a", Tools: []string{"x", "y_*"}, Scope: "s", Allow: "true"}, {Allow: "read_only"}}, ""},
		{"name: a\n", nil, "line 1: a list of rules"},
		{"- [a]\n", nil, "line 1: rule 0 is not a mapping"},
		{"- name: a\n- tool: [x]\n", nil, `line 2: rule 1, key "tool": is not one of name, tools, scope, allow`},
		{"- allow: 'true'\n  allow: 'false'\n", nil, `line 2: rule 0, key "allow": is set twice`},
		{"- tools: x\n", nil, `rule 0, key "tools"`},
		// A value left empty is refused, not read as a key left out; so is one of another type.
		{"- scope: s\n  allow:\n", nil, `line 2: rule 0, key "allow": is empty (null)`},
		{"- scope: ~\n", nil, `rule 0, key "scope": is empty (null)`},
		{"- tools: [x, null]\n", nil, `rule 0, key "tools": is empty (null)`},
		{"- scope: !!binary bm90ZXM6YWRtaW4=\n", nil, `key "scope": has the YAML type !!binary`},
		{"- allow: |\n    \"admin\" in roles\n", []Rule{{Allow: "\"admin\" in roles\n"}}, ""},
	}
	for _, tt := range tests {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(tt.in), &doc); err != nil {
			t.Fatal(err)
		}
		got, err := RulesFromYAML(KindTool, doc.Content[0])
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}
