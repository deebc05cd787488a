package gateway

import (
	"strings"
	"testing"
)

// Every tools/call leaves an audit line, allowed or refused (docs/operations.md), the ones
// the strict reader refuses too: a read-only caller's try at passing one tool to the policy
// and another to the worker (the name twice, a case-variant key a worker's reader would take,
// a lone surrogate another reader decodes otherwise) is what an audit log is there to show.
func TestRefusedToolCallSmugglingIsAudited(t *testing.T) {
	for name, params := range map[string]string{
		"name twice":          `{"name":"read_note","name":"delete_note","arguments":{}}`,
		"case-variant key":    `{"name":"read_note","Name":"delete_note","arguments":{}}`,
		"lone surrogate name": `{"name":"delete_note\ud800","arguments":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			c := f.client("alice-ro")
			c.open()
			r := c.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + params + `}`)
			if m := r.only(t); m.Error == nil {
				t.Fatalf("the smuggling call was answered with a result: %s", r.body)
			}
			if k, _ := auditLines(t, f); len(k) == 0 {
				var info []string
				for _, l := range strings.Split(f.log.String(), "\n") {
					if strings.Contains(l, `"level":"INFO"`) || strings.Contains(l, `"level":"WARN"`) {
						if !strings.Contains(l, `"msg":"trace"`) && !strings.Contains(l, "session opened") && !strings.Contains(l, "worker started") && !strings.Contains(l, "worker stderr") {
							info = append(info, l)
						}
					}
				}
				t.Fatalf("refused (%s), with no audit line; other info lines: %q", r.body, info)
			}
		})
	}
}
