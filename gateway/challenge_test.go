package gateway

import (
	"testing"

	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// The insufficient_scope challenge names, in one go, every scope the refused operation needs
// (2026-07-28 authorization: "servers SHOULD include all scopes required for the current
// operation in a single challenge"), next to the scopes already granted (2025-11-25's
// recommended approach; 2026-07-28 allows it, and clients that replace rather than merge their
// scopes keep what they had). A read-only token calling a tool that needs a rule's scope and
// is a write tool needs both: asking for the rule's scope alone would earn a second 403 for
// the write scope. Both eras.
func TestInsufficientScopeNamesAllNeededScopes(t *testing.T) {
	pol, err := policy.New(policy.Config{
		ReadOnlyTools: demoReadOnlyTools,
		Rules:         []policy.Rule{{Scope: "notes:admin", Tools: []string{"delete_note"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *Options) {
		o.Policy = pol
		o.Pool = pool.Settings{WorkerPer: pool.PerUser}
	})
	tests := []struct {
		name, token, tool, kind, scope string
	}{
		{"read-only, rule and write scope needed", "alice-ro", "delete_note", "forbidden", `scope="mcp:use notes:admin mcp:write"`},
		{"read-only, write scope needed", "alice-ro", "write_note", "readOnly", `scope="mcp:use mcp:write"`},
		{"read-write, rule scope needed", "alice-rw", "delete_note", "forbidden", `scope="mcp:use mcp:write notes:admin"`},
	}
	for _, era := range []string{"legacy", "sessionless"} {
		for _, tc := range tests {
			t.Run(era+"/"+tc.name, func(t *testing.T) {
				c := f.client(tc.token)
				var r reply
				if era == "legacy" {
					c.open()
					r = c.callTool("5", tc.tool, map[string]any{"name": "n"})
				} else {
					r = c.sessionless("5", "tools/call", map[string]any{"name": tc.tool, "arguments": map[string]any{"name": "n"}})
				}
				forbiddenBody(t, r, "5", tc.kind)
				if ch := r.header.Get("WWW-Authenticate"); !containsStr(ch, tc.scope) || !containsStr(ch, `error="insufficient_scope"`) {
					t.Errorf("WWW-Authenticate %q, want %s", ch, tc.scope)
				}
			})
		}
	}
}
