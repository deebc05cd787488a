package gateway

import (
	"strings"
	"testing"
)

// docs/operations.md: the audit line "audit tools/call" is written for "every tools/call,
// allowed or refused", and DESIGN §7 calls it "an audit line per tools/call". A read-only
// caller's tools/call that tries to smuggle a write tool past the policy (the name twice, a
// case-variant key that a worker's reader would take, a lone surrogate that another reader
// decodes otherwise) is refused by the strict reader, rightly, but leaves no audit line, and
// no other line at info level either: the attempts an audit log exists to show are the ones
// it never sees.
func TestRev12RefusedToolCallSmugglingIsAudited(t *testing.T) {
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
