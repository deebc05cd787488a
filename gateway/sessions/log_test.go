package sessions

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestLog: every line names the session and the user, and the worker once set, once each;
// a logger derived before the worker changed keeps the worker of its moment.
func TestLog(t *testing.T) {
	var buf bytes.Buffer
	root := slog.New(slog.NewTextHandler(&buf, nil)).With("gateway", "g1")
	h, log := NewLog(root, "s1", "alice")
	log.Info("opened")
	h.SetWorker("w1")
	derived := log.With("call", "c1")
	log.Info("attached")
	h.SetWorker("w2")
	log.Info("stepped up")
	derived.Info("answered")
	want := []string{
		"msg=opened gateway=g1 session=s1 user=alice",
		"msg=attached gateway=g1 session=s1 user=alice worker=w1",
		`msg="stepped up" gateway=g1 session=s1 user=alice worker=w2`,
		"msg=answered gateway=g1 session=s1 user=alice worker=w1 call=c1",
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i], w) {
			t.Errorf("line %d: %s\nwant it to end %s", i, lines[i], w)
		}
	}
}
