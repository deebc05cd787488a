package policy

import "testing"

// ptr is the hints of a tool whose worker declared readOnlyHint b.
func ptr(b bool) *Hints { return &Hints{ReadOnly: b, Destructive: !b, OpenWorld: true} }

func TestCheckTool(t *testing.T) {
	base := Config{
		ReadOnlyTools: []string{"list_classes", "find_*", "get_?", "[ab]rowse", `lit\*`},
		Rules: []Rule{
			{Scope: "admin", Tools: []string{"drop_*", "commit"}},
			{Scope: "ops", Tools: []string{"commit", "restart"}},
			{Scope: "viewer", Tools: []string{"find_secret*"}},
		},
	}
	trusting := base
	trusting.TrustReadOnlyHints = true

	strict := mustNew(t, base)
	trust := mustNew(t, trusting)

	rw := decide(strict, []string{"mcp:use", "mcp:write"})
	ro := decide(strict, []string{"mcp:use"})
	rwAdmin := decide(strict, []string{"mcp:use", "mcp:write", "admin"})
	roAdmin := decide(strict, []string{"mcp:use", "admin"})
	rwOps := decide(strict, []string{"mcp:use", "mcp:write", "ops"})
	roViewer := decide(strict, []string{"mcp:use", "viewer"})
	missing := decide(strict, []string{"mcp:write"})
	forcedRO := rw
	forcedRO.ReadOnly = true

	tests := []struct {
		name string
		p    *Policy
		a    Access
		tool string
		hint *Hints
		want Verdict
	}{
		// read-write
		{"rw unknown tool", strict, rw, "execute_code", nil, Allowed},
		{"rw safe tool", strict, rw, "list_classes", nil, Allowed},
		{"rw hint false", strict, rw, "execute_code", ptr(false), Allowed},

		// read-only, untrusted hints
		{"ro exact safe name", strict, ro, "list_classes", nil, Allowed},
		{"ro star glob", strict, ro, "find_methods", nil, Allowed},
		{"ro star matches empty suffix", strict, ro, "find_", nil, Allowed},
		{"ro question glob", strict, ro, "get_x", nil, Allowed},
		{"ro question glob needs one char", strict, ro, "get_xy", nil, DeniedReadOnly},
		{"ro class glob", strict, ro, "browse", nil, Allowed},
		{"ro class glob other", strict, ro, "crowse", nil, DeniedReadOnly},
		{"ro escaped star is literal", strict, ro, "lit*", nil, Allowed},
		{"ro escaped star no glob", strict, ro, "litx", nil, DeniedReadOnly},
		{"ro star does not cross slash", strict, ro, "find_a/b", nil, DeniedReadOnly},
		{"ro unknown tool", strict, ro, "execute_code", nil, DeniedReadOnly},
		{"ro prefix is not a match", strict, ro, "list_classes_and_more", nil, DeniedReadOnly},
		{"ro names are case-sensitive", strict, ro, "LIST_CLASSES", nil, DeniedReadOnly},
		{"ro hint true untrusted", strict, ro, "execute_code", ptr(true), DeniedReadOnly},
		{"forced read-only", strict, forcedRO, "execute_code", nil, DeniedReadOnly},

		// read-only, trusted hints
		{"trusted hint true", trust, ro, "execute_code", ptr(true), Allowed},
		{"trusted hint false", trust, ro, "execute_code", ptr(false), DeniedReadOnly},
		{"trusted hint absent", trust, ro, "execute_code", nil, DeniedReadOnly},
		{"trusted hint false but safe-listed", trust, ro, "list_classes", ptr(false), Allowed},

		// rules
		{"rule tool without scope rw", strict, rw, "drop_class", nil, DeniedForbidden},
		{"rule tool with scope rw", strict, rwAdmin, "drop_class", nil, Allowed},
		{"rule tool with scope ro", strict, roAdmin, "drop_class", nil, DeniedReadOnly},
		{"rule tool with scope ro trusted hint", trust, roAdmin, "drop_class", ptr(true), Allowed},
		{"rule tool without scope trusted hint", trust, ro, "drop_class", ptr(true), DeniedForbidden},
		{"every applying rule must pass: admin alone", strict, rwAdmin, "commit", nil, DeniedForbidden},
		{"every applying rule must pass: ops alone", strict, rwOps, "commit", nil, DeniedForbidden},
		{"every applying rule must pass: both", strict, decide(strict, []string{"mcp:use", "mcp:write", "admin", "ops"}), "commit", nil, Allowed},
		{"non-matching rule does not unlock", strict, rwOps, "drop_class", nil, DeniedForbidden},
		{"rule beats safe list without scope", strict, ro, "find_secrets", nil, DeniedForbidden},
		{"rule scope plus safe list", strict, roViewer, "find_secrets", nil, Allowed},
		{"tool no rule mentions", strict, rwOps, "list_classes", nil, Allowed},

		// fail closed
		{"undecided access", strict, Access{}, "list_classes", nil, DeniedForbidden},
		{"undecided read-write looking", strict, Access{ReadOnly: false}, "execute_code", nil, DeniedForbidden},
		{"missing required scope", strict, missing, "execute_code", nil, DeniedForbidden},
		{"empty name", strict, rw, "", nil, DeniedForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.CheckTool(tt.a, tt.tool, tt.hint); got != tt.want {
				t.Errorf("CheckTool(%q) = %v, want %v", tt.tool, got, tt.want)
			}
		})
	}
}
