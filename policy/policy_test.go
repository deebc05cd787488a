package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNewDefaults(t *testing.T) {
	p := mustNew(t, Config{})
	if diff := cmp.Diff([]string{"mcp:use"}, p.RequiredScopes()); diff != "" {
		t.Errorf("RequiredScopes (-want +got):\n%s", diff)
	}
	if got := p.WriteScope(); got != "mcp:write" {
		t.Errorf("WriteScope = %q, want mcp:write", got)
	}
	if diff := cmp.Diff([]string{"mcp:use", "mcp:write"}, p.ScopesSupported()); diff != "" {
		t.Errorf("ScopesSupported (-want +got):\n%s", diff)
	}
}

func TestNewDoesNotMutateConfig(t *testing.T) {
	c := Config{
		RequiredScopes: []string{"b", "a", "b"},
		ExtraScopes:    []string{"z", "c"},
		ReadOnlyTools:  []string{"list_*"},
		Rules:          []Rule{{Scope: "admin", Tools: []string{"x"}}},
	}
	p := mustNew(t, c)
	if diff := cmp.Diff([]string{"b", "a", "b"}, c.RequiredScopes); diff != "" {
		t.Errorf("config RequiredScopes changed:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"z", "c"}, c.ExtraScopes); diff != "" {
		t.Errorf("config ExtraScopes changed:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b", "a"}, p.RequiredScopes()); diff != "" {
		t.Errorf("RequiredScopes (-want +got):\n%s", diff)
	}
	// Returned slices are copies.
	p.RequiredScopes()[0] = "changed"
	p.ScopesSupported()[0] = "changed"
	if p.RequiredScopes()[0] != "b" || p.ScopesSupported()[0] != "a" {
		t.Error("returned slices alias the policy")
	}
}

func TestScopesSupported(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		want []string
	}{
		{"defaults", Config{}, []string{"mcp:use", "mcp:write"}},
		{
			"union sorted and deduplicated",
			Config{
				RequiredScopes: []string{"mcp:use", "tenant"},
				WriteScope:     "rw",
				ExtraScopes:    []string{"profile", "tenant", "profile"},
				Rules: []Rule{
					{Scope: "admin", Tools: []string{"drop_*"}},
					{Scope: "admin", Tools: []string{"commit"}},
					{Scope: "mcp:use", Tools: []string{"x"}},
				},
			},
			[]string{"admin", "mcp:use", "profile", "rw", "tenant"},
		},
		{
			"offline_access only when the operator adds it",
			Config{ExtraScopes: []string{"profile", "offline_access"}},
			[]string{"mcp:use", "mcp:write", "offline_access", "profile"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustNew(t, tt.c)
			if diff := cmp.Diff(tt.want, p.ScopesSupported()); diff != "" {
				t.Errorf("ScopesSupported (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewValidation(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		want []string // substrings, one per expected problem
	}{
		{
			"several problems at once",
			Config{
				RequiredScopes: []string{"mcp:use", ""},
				WriteScope:     "mcp:use",
				ExtraScopes:    []string{"has space"},
				ReadOnlyTools:  []string{"list_[", "ok", ""},
				Rules: []Rule{
					{Tools: []string{"x"}},
					{Name: "bad", Allow: `"a" in nope`},
					{Scope: "admin", Tools: []string{"a\\"}},
				},
			},
			[]string{
				`required_scopes[1] "": empty scope`,
				`write_scope "mcp:use" is also a required scope`,
				`extra_scopes[0] "has space": invalid character`,
				`read_only_tools[0] "list_[": bad glob pattern`,
				`read_only_tools[2] "": empty tool pattern`,
				`rules[0]: neither scope nor allow`,
				"rules[1] (bad).allow: ERROR: <input>:1:8: undeclared reference to 'nope'",
				`rules[2].tools[0] "a\\": bad glob pattern`,
			},
		},
		{
			"empty write scope",
			Config{WriteScope: " "},
			[]string{`write_scope " ": invalid character`},
		},
		{
			"offline_access is never required",
			Config{RequiredScopes: []string{"offline_access"}, Rules: []Rule{{Scope: "offline_access", Tools: []string{"x"}}}},
			[]string{"required_scopes[0]: offline_access is not a resource scope", "rules[0].scope: offline_access"},
		},
		{
			"write scope offline_access",
			Config{WriteScope: "offline_access"},
			[]string{"write_scope: offline_access"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.c)
			if err == nil {
				t.Fatalf("New = %v, nil; want errors", p)
			}
			var problems interface{ Unwrap() []error }
			if errors.As(err, &problems) && len(problems.Unwrap()) != len(tt.want) {
				t.Errorf("got %d problems, want %d:\n%v", len(problems.Unwrap()), len(tt.want), err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			var joined interface{ Unwrap() []error }
			if !errors.As(err, &joined) {
				t.Errorf("error %T is not joined", err)
			}
		})
	}
}

func TestNewAcceptsDuplicatesAndGlobs(t *testing.T) {
	_, err := New(Config{
		RequiredScopes: []string{"mcp:use", "mcp:use"},
		ExtraScopes:    []string{"mcp:write", "profile"},
		ReadOnlyTools:  []string{"list_*", "list_*", "get_?", "[a-c]*", `lit\*`},
		Rules:          []Rule{{Scope: "a", Tools: []string{"x", "x"}}, {Scope: "a", Tools: []string{"y"}}},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
}

// TestScopeCharacterBounds walks the edges of RFC 6749 §3.3's scope-token alphabet
// (%x21 / %x23-5B / %x5D-7E): the first and last printable characters are scope
// characters, the ones just outside them and the two excluded in the middle are not.
func TestScopeCharacterBounds(t *testing.T) {
	tests := []struct {
		scope string
		ok    bool
	}{
		{"!", true}, // 0x21, the first allowed
		{"a!b", true},
		{"~", true}, // 0x7e, the last allowed
		{"read~write", true},
		{"#[]", true}, // either side of the backslash
		{" ", false},  // 0x20
		{"a b", false},
		{"a\x7fb", false}, // 0x7f, DEL
		{"a\x80b", false}, // not ASCII
		{`a"b`, false},    // 0x22
		{`a\b`, false},    // 0x5c
		{"a\tb", false},   // a control character
		{"", false},       // empty
	}
	for _, tt := range tests {
		err := checkScope(tt.scope)
		if (err == nil) != tt.ok {
			t.Errorf("checkScope(%q) = %v, want ok=%v", tt.scope, err, tt.ok)
		}
		// The same rule holds where operators meet it: in the configuration.
		_, err = New(Config{ExtraScopes: []string{tt.scope}})
		if (err == nil) != tt.ok {
			t.Errorf("New(extra_scopes: [%q]) = %v, want ok=%v", tt.scope, err, tt.ok)
		}
	}
}

// TestScopeEveryCharacter checks the whole byte range against the grammar, so a scope
// character can neither be lost nor gained.
func TestScopeEveryCharacter(t *testing.T) {
	for c := 0; c < 256; c++ {
		want := c >= 0x21 && c <= 0x7e && c != '"' && c != '\\'
		s := "x" + string([]byte{byte(c)}) + "y"
		if err := checkScope(s); (err == nil) != want {
			t.Errorf("checkScope(%q) = %v, want ok=%v", s, err, want)
		}
	}
}
