package gateway

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// hiddenToolsLines are the log lines that say how many tools read-only sessions could not see.
func hiddenToolsLines(t *testing.T, f *fixture) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range f.log.records(t) {
		if msg, _ := r["msg"].(string); strings.HasPrefix(msg, "read-only sessions see ") {
			out = append(out, r)
		}
	}
	return out
}

// A read-only session's tools/list that hides tools is said once per worker, at info, with the
// counts and the settings that would show them; a list that hides nothing, or a read-write
// session's, says nothing.
func TestReadOnlyHiddenToolsLoggedOncePerWorker(t *testing.T) {
	cases := []struct {
		name      string
		per       string
		readOnly  []string // read_only_tools
		token     string
		wantLines int
	}{
		{"per user: two sessions, one worker", pool.PerUser, demoReadOnlyTools, "alice-ro", 1},
		{"per session: two sessions, two workers", pool.PerSession, demoReadOnlyTools, "alice-ro", 2},
		{"every tool vouched for", pool.PerUser, []string{"*"}, "alice-ro", 0},
		{"read-write sessions", pool.PerUser, demoReadOnlyTools, "alice-rw", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := policy.New(policy.Config{ReadOnlyTools: tc.readOnly})
			if err != nil {
				t.Fatal(err)
			}
			f := newFixture(t, func(o *Options) {
				o.Pool = pool.Settings{WorkerPer: tc.per}
				o.Policy = pol
			})
			var seen int
			for range 2 {
				c := f.client(tc.token)
				c.open()
				for _, id := range []string{"2", "3"} {
					seen = len(listedTools(t, c.rpc(id, "tools/list", map[string]any{})))
				}
			}
			lines := hiddenToolsLines(t, f)
			if len(lines) != tc.wantLines {
				t.Fatalf("%d hidden-tools log lines, want %d: %v", len(lines), tc.wantLines, lines)
			}
			for _, l := range lines {
				hidden, total := int(l["hidden"].(float64)), int(l["tools"].(float64))
				if l["level"] != "INFO" || hidden < len(mutatingDemoTools) || total != seen+hidden {
					t.Errorf("line %v: want INFO, %d seen, at least the %d mutating tools hidden, of %d", l, seen, len(mutatingDemoTools), total)
				}
				if msg := l["msg"].(string); !strings.Contains(msg, fmt.Sprintf(" see %d of %d tools", seen, total)) {
					t.Errorf("line %q does not say %d of %d", msg, seen, total)
				}
				msg := l["msg"].(string)
				if !strings.Contains(msg, "read_only_tools") || !strings.Contains(msg, "trust_read_only_hints") {
					t.Errorf("line %q does not name the settings that would show the tools", msg)
				}
			}
		})
	}
}
