package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// decide is the Access for a token carrying scopes and no other claims.
func decide(p *Policy, scopes []string) Access { return p.DecideToken(Token{Scopes: scopes}) }

func TestDecide(t *testing.T) {
	p := mustNew(t, Config{RequiredScopes: []string{"mcp:use", "tenant"}})
	tests := []struct {
		name        string
		scopes      []string
		wantMissing []string
		wantRO      bool
		wantGranted []string
	}{
		{"nothing", nil, []string{"mcp:use", "tenant"}, true, []string{}},
		{"required only", []string{"tenant", "mcp:use"}, nil, true, []string{"mcp:use", "tenant"}},
		{"read-write", []string{"mcp:use", "tenant", "mcp:write"}, nil, false, []string{"mcp:use", "mcp:write", "tenant"}},
		{"write without required", []string{"mcp:write"}, []string{"mcp:use", "tenant"}, false, []string{"mcp:write"}},
		{"one missing", []string{"mcp:use", "mcp:use", "", "x"}, []string{"tenant"}, true, []string{"mcp:use", "x"}},
		{"case matters", []string{"MCP:USE", "tenant", "MCP:WRITE"}, []string{"mcp:use"}, true, []string{"MCP:USE", "MCP:WRITE", "tenant"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := decide(p, tt.scopes)
			if diff := cmp.Diff(tt.wantMissing, a.Missing(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Missing (-want +got):\n%s", diff)
			}
			if a.ReadOnly != tt.wantRO {
				t.Errorf("ReadOnly = %v, want %v", a.ReadOnly, tt.wantRO)
			}
			if diff := cmp.Diff(tt.wantGranted, a.Granted(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Granted (-want +got):\n%s", diff)
			}
			for _, s := range tt.wantGranted {
				if !a.HasScope(s) {
					t.Errorf("HasScope(%q) = false", s)
				}
			}
			if a.HasScope("absent") || a.HasScope("") {
				t.Error("HasScope of an ungranted scope = true")
			}
		})
	}
}

func TestDecideDoesNotAliasInput(t *testing.T) {
	p := mustNew(t, Config{})
	in := []string{"mcp:write", "mcp:use"}
	a := decide(p, in)
	in[0], in[1] = "x", "y"
	if !a.HasScope("mcp:use") || a.ReadOnly {
		t.Errorf("Access changed with its input: %v", a.Granted())
	}
	a.Granted()[0] = "z"
	if !a.HasScope("mcp:use") {
		t.Error("Granted aliases the Access")
	}
}

func TestNarrow(t *testing.T) {
	p := mustNew(t, Config{Rules: []Rule{{Scope: "admin", Tools: []string{"drop"}}}})
	rw := decide(p, []string{"mcp:use", "mcp:write", "admin"})
	ro := decide(p, []string{"mcp:use", "admin"})
	plain := decide(p, []string{"mcp:use", "mcp:write"})
	none := decide(p, []string{"other"})
	tests := []struct {
		name        string
		a, b        Access
		wantRO      bool
		wantGranted []string
		wantMissing []string
		wantDrop    Verdict
	}{
		{"rw and rw", rw, rw, false, []string{"admin", "mcp:use", "mcp:write"}, nil, Allowed},
		{"opened read-only stays read-only", ro, rw, true, []string{"admin", "mcp:use"}, nil, DeniedReadOnly},
		{"later read-only token narrows", rw, ro, true, []string{"admin", "mcp:use"}, nil, DeniedReadOnly},
		{"later token without rule scope", rw, plain, false, []string{"mcp:use", "mcp:write"}, nil, DeniedForbidden},
		{"opened without rule scope", plain, rw, false, []string{"mcp:use", "mcp:write"}, nil, DeniedForbidden},
		{"missing carries over", rw, none, true, []string{}, []string{"mcp:use"}, DeniedForbidden},
		{"undecided is never widened", Access{}, rw, false, []string{}, nil, DeniedForbidden},
		{"undecided on the right", rw, Access{}, false, []string{}, nil, DeniedForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.a.Narrow(tt.b)
			if n.ReadOnly != tt.wantRO {
				t.Errorf("ReadOnly = %v, want %v", n.ReadOnly, tt.wantRO)
			}
			if diff := cmp.Diff(tt.wantGranted, n.Granted(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Granted (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantMissing, n.Missing(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Missing (-want +got):\n%s", diff)
			}
			if got := p.CheckTool(n, "drop", nil); got != tt.wantDrop {
				t.Errorf("CheckTool(drop) = %v, want %v", got, tt.wantDrop)
			}
		})
	}
}
