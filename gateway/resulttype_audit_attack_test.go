package gateway

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessionless"
)

// Attacks on resultTypeOf (bridge_pass.go) as a hostile worker: every answer of a sessionless
// worker passes through it (passInputRequired), and such a worker names resultType in all of
// them.

// hostileToolNames are tool names a client makes up to forge or garble audit lines: line
// breaks, a terminal escape, Unicode line separators, and a name longer than maxAuditTool
// whose cut falls inside a multi-byte rune.
var hostileToolNames = []string{
	"echo\n{\"msg\":\"audit tools/call\",\"tool\":\"forged\",\"outcome\":\"ok\"}",
	"echo\r\nlevel=INFO msg=forged",
	"\x1b[2K\x1b[1Gecho",
	"echo\u2028forged\u2029",
	strings.Repeat("n", maxAuditTool-1) + "日本",
}

// TestAuditLineHostileToolNames: whatever the name, each audit line is one JSON line whose
// tool is the name as auditTool clips it, legacy and sessionless, refused or not.
func TestAuditLineHostileToolNames(t *testing.T) {
	check := func(t *testing.T, f *fixture, want int) {
		t.Helper()
		eventually(t, 10*time.Second, "the audit lines", func() bool { k, _ := auditLines(t, f); return len(k) >= want })
		_, vals := auditLines(t, f) // a line cut in two fails to decode here
		if len(vals) != want {
			t.Fatalf("%d audit lines, want %d:\n%s", len(vals), want, f.log)
		}
		for i, v := range vals {
			if got, w := v["tool"], auditTool(hostileToolNames[i]); got != w {
				t.Errorf("line %d: tool %q, want %q", i, got, w)
			}
		}
		if strings.Contains(f.log.String(), "\x1b") || strings.Contains(f.log.String(), "\u2028") {
			t.Errorf("the log holds a raw escape or line separator:\n%q", f.log)
		}
	}
	t.Run("legacy", func(t *testing.T) {
		f := newFixture(t)
		c := f.client("alice-rw")
		c.open()
		for i, name := range hostileToolNames {
			c.callTool(fmt.Sprint(i+2), name, map[string]any{})
		}
		check(t, f, len(hostileToolNames))
	})
	t.Run("sessionless", func(t *testing.T) {
		f := newSessionlessFixture(t)
		c := f.client("alice-rw")
		for i, name := range hostileToolNames {
			// Mcp-Name in the sentinel form: a line break may not go in a header.
			sentinel := "=?base64?" + base64.StdEncoding.EncodeToString([]byte(name)) + "?="
			if r := c.sessionless(fmt.Sprint(i+1), "tools/call", map[string]any{"name": name, "arguments": map[string]any{}}, sessionless.HeaderName, sentinel); r.status == 400 && strings.Contains(string(r.body), "Mcp-Name") {
				t.Fatalf("%q: %d %s", name, r.status, r.body)
			}
		}
		check(t, f, len(hostileToolNames))
	})
}

// TestSessionlessUnknownToolIsAudited: a read-only sessionless client's call of a tool the
// worker does not have is refused by gemgate, and audited as the legacy era audits it (outcome
// unknown): probing for tools is what an audit trail is for.
func TestSessionlessUnknownToolIsAudited(t *testing.T) {
	f := newSessionlessFixture(t)
	c := f.client("alice-ro")
	if r := c.sessionless("1", "tools/call", map[string]any{"name": "no_such_tool", "arguments": map[string]any{}}); r.status == 200 && !strings.Contains(string(r.body), "unknown tool") {
		t.Fatalf("no_such_tool: %d %s", r.status, r.body)
	}
	// gemgate writes a refusal's audit line before it answers (toolGate, in both eras
	// alike): it is there by now or never.
	_, vals := auditLines(t, f)
	if len(vals) != 1 || vals[0]["tool"] != "no_such_tool" || vals[0]["outcome"] != "unknown" {
		t.Fatalf("audit lines %v, want one of no_such_tool, outcome unknown:\n%s", vals, f.log)
	}
}
