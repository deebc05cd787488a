package gateway

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/gateway/sessionless"
)

// auditLines are the audit lines in the fixture's log, each as its keys in order and its
// values.
func auditLines(t *testing.T, f *fixture) (keys [][]string, vals []map[string]any) {
	t.Helper()
	for line := range strings.SplitSeq(strings.TrimSpace(f.log.String()), "\n") {
		if !strings.Contains(line, `"msg":"audit tools/call"`) {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		var order []string
		if _, err := dec.Token(); err != nil { // {
			t.Fatal(err)
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			order = append(order, k.(string))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		keys, vals = append(keys, order), append(vals, m)
	}
	return keys, vals
}

// TestAuditLineFields: the audit line of a tools/call keeps its level, its fields and their
// order, in both eras; a refused call's line has the fields of a forwarded one.
func TestAuditLineFields(t *testing.T) {
	t.Run("legacy", func(t *testing.T) {
		f := newFixture(t)
		c := f.client("alice-rw")
		c.open()
		c.callTool("2", "echo", map[string]any{"text": "x"})
		// The line is written once the answer is out: the client may read the log first.
		eventually(t, 10*time.Second, "the audit line", func() bool { k, _ := auditLines(t, f); return len(k) > 0 })
		keys, vals := auditLines(t, f)
		if len(keys) != 1 {
			t.Fatalf("%d audit lines, want 1:\n%s", len(keys), f.log)
		}
		want := []string{"time", "level", "msg", "session", "user", "worker", "tool", "read_only", "outcome", "duration"}
		if !slices.Equal(keys[0], want) {
			t.Errorf("keys %q, want %q", keys[0], want)
		}
		v := vals[0]
		if v["level"] != "INFO" || v["session"] != c.session || v["user"] != "alice" || v["tool"] != "echo" ||
			v["read_only"] != false || v["outcome"] != "ok" {
			t.Errorf("audit line %v", v)
		}
		if d, ok := v["duration"].(float64); !ok || d <= 0 {
			t.Errorf("duration %v, want a positive number of nanoseconds", v["duration"])
		}
	})
	t.Run("sessionless", func(t *testing.T) {
		f := newSessionlessFixture(t)
		c := f.client("alice-ro")
		if r := c.sessionless("1", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}); r.status != 200 {
			t.Fatalf("echo: %d %s", r.status, r.body)
		}
		if r := c.sessionless("2", "tools/call", map[string]any{"name": "write_note", "arguments": map[string]any{"name": "n", "text": "x"}}); r.status == 200 {
			t.Fatalf("write_note read-only: %d %s", r.status, r.body)
		}
		eventually(t, 10*time.Second, "the audit lines", func() bool { k, _ := auditLines(t, f); return len(k) >= 2 })
		keys, vals := auditLines(t, f)
		if len(keys) != 2 {
			t.Fatalf("%d audit lines, want 2:\n%s", len(keys), f.log)
		}
		for i, want := range [][]string{
			{"time", "level", "msg", "user", "worker", "era", "tool", "read_only", "outcome", "duration"},
			{"time", "level", "msg", "user", "worker", "era", "tool", "read_only", "outcome", "duration", "decided_by"},
		} {
			if !slices.Equal(keys[i], want) {
				t.Errorf("line %d: keys %q, want %q", i, keys[i], want)
			}
			v := vals[i]
			if v["level"] != "INFO" || v["user"] != "alice" || v["era"] != sessionless.Version || v["read_only"] != true || v["worker"] == "" {
				t.Errorf("line %d: %v", i, v)
			}
		}
		if vals[0]["tool"] != "echo" || vals[0]["outcome"] != "ok" || vals[1]["tool"] != "write_note" || vals[1]["outcome"] != "readOnly" ||
			vals[1]["decided_by"] != "read-only: not vouched read-only" {
			t.Errorf("lines %v", vals)
		}
	})
}

// TestAuditLineClipsTheToolName: an unknown tool's name is the client's, as long as its body
// allows; the audit line keeps its first maxAuditTool bytes and says how much was cut.
func TestAuditLineClipsTheToolName(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	name := strings.Repeat("n", 20000)
	c.callTool("2", name, map[string]any{}) // refused, by gemgate or the worker: audited either way
	eventually(t, 10*time.Second, "the audit line", func() bool { k, _ := auditLines(t, f); return len(k) > 0 })
	_, vals := auditLines(t, f)
	want := name[:maxAuditTool] + "...(+" + strconv.Itoa(len(name)-maxAuditTool) + " more)"
	if len(vals) != 1 || vals[0]["tool"] != want || vals[0]["outcome"] == "ok" {
		t.Fatalf("audit lines %v, want one with the tool clipped to %d bytes", vals, maxAuditTool)
	}
}
