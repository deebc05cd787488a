package policy

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// kindsPolicy has prompt and resource rules of the kinds the docs show: a prompt for one
// group, prompts and resources behind a scope, a resource tree by the URI's prefix, and a
// rule that reads the access mode.
func kindsPolicy(t testing.TB) *Policy {
	return mustNew(t, Config{
		ExtraScopes: []string{"hr:read"},
		PromptRules: []Rule{
			{Name: "reviewers", Prompts: []string{"review_*"}, Allow: `"reviewers" in groups`},
			{Name: "hr-prompts", Prompts: []string{"salary"}, Scope: "hr:read"},
			{Name: "writers", Prompts: []string{"draft_change"}, Allow: `!read_only && prompt.size() > 0`},
		},
		ResourceRules: []Rule{
			{Name: "hr-files", Scope: "hr:read", Allow: `uri.startsWith("file:///hr/")`, URIs: []string{"file:///hr/*"}},
			{Name: "no-secrets", Allow: `!uri.contains("/secret/") || "admins" in roles`},
		},
	})
}

func TestPromptAndResourceRules(t *testing.T) {
	p := kindsPolicy(t)
	reviewers := map[string]any{"groups": []any{"reviewers"}}
	admins := map[string]any{"roles": []any{"admins"}}
	tests := []struct {
		name, scopes string
		claims       map[string]any
		kind         Kind
		item         string
		want         Verdict
		why          string
	}{
		{"read-only keeps a prompt no rule takes", "mcp:use", nil, KindPrompt, "summarize", Allowed, "reading is not a change"},
		{"read-only keeps a resource no rule takes", "mcp:use", nil, KindResource, "file:///docs/a.md", Allowed, "reading is not a change"},
		{"group prompt, in the group", "mcp:use", reviewers, KindPrompt, "review_code", Allowed, "reading is not a change"},
		{"group prompt, not in the group", "mcp:use mcp:write", nil, KindPrompt, "review_code", DeniedForbidden, "rule reviewers"},
		{"scope prompt without the scope", "mcp:use mcp:write", nil, KindPrompt, "salary", DeniedForbidden, "rule hr-prompts"},
		{"scope prompt with the scope", "mcp:use hr:read", nil, KindPrompt, "salary", Allowed, "reading is not a change"},
		{"prompt rules are not tool rules", "mcp:use mcp:write", nil, KindTool, "salary", Allowed, "read-write token"},
		{"a read_only rule asks for the write scope", "mcp:use", nil, KindPrompt, "draft_change", DeniedReadOnly, "rule writers"},
		{"a read_only rule lets read-write", "mcp:use mcp:write", nil, KindPrompt, "draft_change", Allowed, "reading is not a change"},
		{"resource glob without the scope", "mcp:use mcp:write", nil, KindResource, "file:///hr/pay.csv", DeniedForbidden, "rule hr-files"},
		{"resource glob with the scope", "mcp:use hr:read", nil, KindResource, "file:///hr/pay.csv", Allowed, "reading is not a change"},
		{"a glob's * stops at /", "mcp:use", nil, KindResource, "file:///hr/x/pay.csv", Allowed, "reading is not a change"},
		{"resource by URI in CEL", "mcp:use mcp:write", nil, KindResource, "file:///a/secret/k", DeniedForbidden, "rule no-secrets"},
		{"resource by URI in CEL, with the role", "mcp:use", admins, KindResource, "file:///a/secret/k", Allowed, "reading is not a change"},
		{"an empty URI", "mcp:use mcp:write", nil, KindResource, "", DeniedForbidden, "the token lacks a required scope"},
		{"no required scope", "hr:read", nil, KindPrompt, "summarize", DeniedForbidden, "the token lacks a required scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, why := p.ExplainKind(tt.kind, p.DecideToken(tok(tt.scopes, tt.claims)), tt.item, nil)
			if v != tt.want || why != tt.why {
				t.Errorf("ExplainKind = %v, %q; want %v, %q", v, why, tt.want, tt.why)
			}
		})
	}
	if _, why := p.ExplainKind(KindPrompt, Access{}, "summarize", nil); why != "the token lacks a required scope" {
		t.Errorf("an undecided access: %q", why)
	}
	if got := p.ScopesSupported(); !reflect.DeepEqual(got, []string{"hr:read", "mcp:use", "mcp:write"}) {
		t.Errorf("ScopesSupported = %v", got)
	}
}

// Rules of any kind, alone or together, read the token's claims: DecideToken must gather
// them whenever there is a rule.
func TestEveryKindOfRuleReadsClaims(t *testing.T) {
	g := []Rule{{Allow: `"g" in groups`}}
	for _, c := range []Config{
		{PromptRules: g},
		{ResourceRules: g},
		{Rules: g, PromptRules: g},
		{PromptRules: g, ResourceRules: g},
		{Rules: g, ResourceRules: g},
	} {
		p := mustNew(t, c)
		a := p.DecideToken(tok("mcp:use mcp:write", map[string]any{"groups": []any{"g"}}))
		for k := range Kinds {
			if v, _ := p.ExplainKind(k, a, "x", nil); v != Allowed {
				t.Errorf("%+v, %v: %v", c, k, v)
			}
		}
	}
}

// A rule that reads read_only refuses a read-only token as the read-only gate does, with the
// write scope's challenge (DeniedReadOnly), not as a forbidden tool nothing would unlock.
func TestReadOnlyRuleIsAReadOnlyRefusal(t *testing.T) {
	p := mustNew(t, Config{
		ReadOnlyTools: []string{"peek", "list"},
		Rules: []Rule{
			{Name: "rw-only", Tools: []string{"peek"}, Allow: `!read_only`},
			{Name: "admin-rw", Tools: []string{"list"}, Scope: "admin", Allow: `!read_only`},
		},
	})
	ro := decide(p, []string{"mcp:use"})
	if v, why := p.ExplainKind(KindTool, ro, "peek", nil); v != DeniedReadOnly || why != "rule rw-only" {
		t.Errorf("read-only peek = %v, %q; want readOnly by rule rw-only", v, why)
	}
	if v := p.CheckTool(decide(p, []string{"mcp:use", "mcp:write"}), "peek", nil); v != Allowed {
		t.Errorf("read-write peek = %v", v)
	}
	// The write scope alone does not unlock list: the rule's scope is needed too.
	if v, why := p.ExplainKind(KindTool, ro, "list", nil); v != DeniedForbidden || why != "rule admin-rw" {
		t.Errorf("read-only list = %v, %q; want forbidden by rule admin-rw", v, why)
	}
	if v := p.CheckTool(decide(p, []string{"mcp:use", "admin"}), "list", nil); v != DeniedReadOnly {
		t.Errorf("read-only list with admin = %v; want readOnly", v)
	}
}

func TestKindRuleCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		want string
	}{
		{"prompt rule reads tool", Config{PromptRules: []Rule{{Allow: `tool == "x"`}}}, `prompt_rules[0].allow: ERROR: <input>:1:1: undeclared reference to 'tool'`},
		{"resource rule reads prompt", Config{ResourceRules: []Rule{{Name: "r", Allow: `prompt == "x"`}}}, `resource_rules[0] (r).allow: ERROR`},
		{"resource rule reads annotations", Config{TrustReadOnlyHints: true, ResourceRules: []Rule{{Allow: `annotations.readOnlyHint`}}}, `undeclared reference to 'annotations'`},
		{"prompt rule with tools", Config{PromptRules: []Rule{{Scope: "s", Tools: []string{"x"}}}}, `prompt_rules[0]: tools is not a key of prompt_rules`},
		{"tool rule with uris", Config{Rules: []Rule{{Scope: "s", URIs: []string{"x"}}}}, `rules[0]: uris is not a key of tool_rules`},
		{"resource rule with prompts", Config{ResourceRules: []Rule{{Scope: "s", Prompts: []string{"x"}}}}, `resource_rules[0]: prompts is not a key of resource_rules`},
		{"bad URI glob", Config{ResourceRules: []Rule{{Scope: "s", URIs: []string{"file:///[a"}}}}, `resource_rules[0].uris[0] "file:///[a": bad glob pattern`},
		{"bad prompt glob", Config{PromptRules: []Rule{{Scope: "s", Prompts: []string{"a\\"}}}}, `prompt_rules[0].prompts[0]`},
		{"restricts nothing", Config{PromptRules: []Rule{{Prompts: []string{"a"}}}}, `prompt_rules[0]: neither scope nor allow`},
		{"offline_access", Config{ResourceRules: []Rule{{Scope: "offline_access"}}}, `resource_rules[0].scope: offline_access`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v; want %q", err, tt.want)
			}
		})
	}
	ok := Config{TrustReadOnlyHints: true,
		PromptRules:   []Rule{{Prompts: []string{"a", "b_*"}, Allow: `prompt != "" && !read_only && sub != "" && user != "" && "x" in scopes && "g" in groups && "r" in roles && claims.x == 1`}},
		ResourceRules: []Rule{{URIs: []string{"file:///*"}, Allow: `uri.startsWith("file:")`}}}
	if _, err := New(ok); err != nil {
		t.Errorf("New: %v", err)
	}
}

func TestKindRulesFromYAML(t *testing.T) {
	tests := []struct {
		k    Kind
		in   string
		want []Rule
		err  string
	}{
		{KindPrompt, "- name: a\n  prompts: [x, \"y_*\"]\n  scope: s\n", []Rule{{Name: "a", Prompts: []string{"x", "y_*"}, Scope: "s"}}, ""},
		{KindResource, "- uris: [\"file:///a/*\"]\n  allow: 'true'\n", []Rule{{URIs: []string{"file:///a/*"}, Allow: "true"}}, ""},
		{KindPrompt, "- tools: [x]\n", nil, `rule 0, key "tools": is not one of name, prompts, scope, allow`},
		{KindResource, "- prompts: [x]\n", nil, `is not one of name, uris, scope, allow`},
		{KindTool, "- uris: [x]\n", nil, `is not one of name, tools, scope, allow`},
		{KindResource, "uris: x\n", nil, "line 1: a list of rules, each a mapping (name, uris, scope, allow)"},
		{KindPrompt, "- [a]\n", nil, "line 1: rule 0 is not a mapping (name, prompts, scope, allow)"},
		{KindResource, "- uris: [a]\n  uris: [b]\n", nil, `key "uris": is set twice`},
	}
	for _, tt := range tests {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(tt.in), &doc); err != nil {
			t.Fatal(err)
		}
		got, err := RulesFromYAML(tt.k, doc.Content[0])
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

func TestRulesKind(t *testing.T) {
	for key, want := range map[string]Kind{"tool_rules": KindTool, "prompt_rules": KindPrompt, "resource_rules": KindResource} {
		if k, ok := RulesKind(key); !ok || k != want {
			t.Errorf("RulesKind(%q) = %v, %v", key, k, ok)
		}
	}
	if _, ok := RulesKind("rules"); ok {
		t.Error("rules is a rules key")
	}
	if s := KindPrompt.String() + KindResource.String() + KindTool.String(); s != "promptresourcetool" {
		t.Errorf("String: %q", s)
	}
}

func TestFilterPromptAndResourceLists(t *testing.T) {
	p := kindsPolicy(t)
	ro := p.DecideToken(tok("mcp:use", nil))
	tests := []struct {
		method, in, want string
	}{
		{"prompts/list", `{"prompts":[{"name":"summarize"}, {"name":"review_code","arguments":[]},{"name":"salary"}],"nextCursor":"n"}`,
			`{"prompts":[{"name":"summarize"}],"nextCursor":"n"}`},
		{"resources/list", `{"resources":[{"uri":"file:///hr/pay.csv","name":"pay"},{"uri":"file:///docs/a.md","name":"a"}]}`,
			`{"resources":[{"uri":"file:///docs/a.md","name":"a"}]}`},
		{"resources/templates/list", `{"resourceTemplates":[{"uriTemplate":"file:///a/secret/{k}","name":"s"},{"uriTemplate":"file:///docs/{p}","name":"d"}]}`,
			`{"resourceTemplates":[{"uriTemplate":"file:///docs/{p}","name":"d"}]}`},
		{"prompts/list", `{"prompts":[{"name":"salary"}]}`,
			`{"_meta":{"gemgate/hidden":{"explanation":"gemgate hides all 1 prompts the worker listed in this answer from this token: rule hr-prompts"}},"prompts":[]}`},
		{"resources/list", `{"resources":[{"uri":"file:///docs/a.md"}]}`, `{"resources":[{"uri":"file:///docs/a.md"}]}`},
	}
	for _, tt := range tests {
		got, hints, _, err := p.FilterList(tt.method, ro, json.RawMessage(tt.in))
		if err != nil || string(got) != tt.want || hints == nil {
			t.Errorf("FilterList(%s, %s) = %s, %v, %v; want %s", tt.method, tt.in, got, hints, err, tt.want)
		}
	}
	for method, in := range map[string]string{
		"prompts/list":             `{"prompts":[{"name":"a","Name":"b"}]}`,
		"resources/list":           `{"resources":[{"uri":"file:///docs/a","uri":"file:///hr/x"}]}`,
		"resources/templates/list": `{"resourceTemplates":[{"URITemplate":"x"}]}`,
		"tools/list":               `{"prompts":[]}`,
		"ping":                     `{}`,
	} {
		if got, _, _, err := p.FilterList(method, ro, json.RawMessage(in)); !errors.Is(err, ErrMalformedList) || got != nil {
			t.Errorf("FilterList(%s, %s) = %s, %v; want an error", method, in, got, err)
		}
	}
	// Without rules of its kind a list is not read: nothing decides on it.
	plain := mustNew(t, Config{PromptRules: []Rule{{Scope: "s"}}})
	odd := `{"resources":[{"uri":1}]}`
	if got, _, _, err := plain.FilterList("resources/list", ro, json.RawMessage(odd)); err != nil || string(got) != odd {
		t.Errorf("unruled list: %s, %v", got, err)
	}
	if _, _, _, err := plain.FilterList("prompts/list", ro, json.RawMessage(`{"prompts":[{"name":1}]}`)); !errors.Is(err, ErrMalformedList) {
		t.Errorf("ruled list: %v", err)
	}
	for _, m := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
		if !Filters(m) {
			t.Errorf("Filters(%s) is false", m)
		}
	}
	if Filters("prompts/get") {
		t.Error("Filters(prompts/get)")
	}
}

func TestListNames(t *testing.T) {
	got, _, err := ListNames("resources/list", json.RawMessage(`{"resources":[{"uri":"a:b","name":"n"},{"name":"x","uri":"c:\u0064"}]}`))
	if err != nil || !reflect.DeepEqual(got, []string{"a:b", "c:d"}) {
		t.Errorf("ListNames = %v, %v", got, err)
	}
	for _, in := range []string{`{"resources":[{"name":"x"}]}`, `{"resources":[{"uri":""}]}`, `{"resources":{}}`, `{}`} {
		if _, _, err := ListNames("resources/list", json.RawMessage(in)); err == nil {
			t.Errorf("ListNames(%s): no error", in)
		}
	}
	if _, _, err := ListNames("prompts/get", json.RawMessage(`{}`)); err == nil {
		t.Error("ListNames of prompts/get")
	}
}

func TestExplainListKinds(t *testing.T) {
	p := kindsPolicy(t)
	a := p.DecideToken(tok("mcp:use", nil))
	var b strings.Builder
	if err := p.ExplainTools(&b, a, json.RawMessage(`{"prompts":[{"name":"summarize"},{"name":"salary"}]}`)); err != nil {
		t.Fatal(err)
	}
	want := "ALLOWED  summarize                        reading is not a change\nHIDDEN   salary                           rule hr-prompts\n"
	if b.String() != want {
		t.Errorf("ExplainTools:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := p.ExplainTools(&b, a, json.RawMessage(`{"resourceTemplates":[{"uriTemplate":"file:///hr/{f}"}]}`)); err != nil || !strings.Contains(b.String(), "HIDDEN   file:///hr/{f}                   rule hr-files") {
		t.Errorf("templates: %q, %v", b.String(), err)
	}
	for _, in := range []string{`{"prompts":[],"tools":[]}`, `{"things":[]}`, `[]`, `{"prompts":[{"name":"a","name":"b"}]}`} {
		if err := p.ExplainTools(&b, a, json.RawMessage(in)); !errors.Is(err, ErrMalformedList) {
			t.Errorf("ExplainTools(%s) = %v", in, err)
		}
	}
}
