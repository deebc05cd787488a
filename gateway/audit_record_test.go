package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// auditByLogAttrs is how the audit line was written before it became a record handed to the
// handler: the reference the record must match byte for byte.
func auditByLogAttrs(s *session, tool string, readOnly bool, outcome string, d time.Duration) {
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "audit tools/call",
		slog.String("tool", auditTool(tool)), slog.Bool("read_only", readOnly),
		slog.String("outcome", outcome), slog.Duration("duration", d))
}

// TestAuditRecordMatchesLogAttrs: for each log format gemgate offers (cmd/gemgate newLogger:
// the standard JSON and text handlers) and each level setting, the audit line written as a
// record is the very line LogAttrs wrote, with the session's attributes (before and after
// the worker is named), and none at all where the level suppresses info. The time is left out
// of both lines, the one field that differs between two writes; the writer is the one the
// handler was given, so what the writer does (cmd/gemgate's escaping) applies to both alike.
func TestAuditRecordMatchesLogAttrs(t *testing.T) {
	noTime := func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	formats := map[string]func(io.Writer, *slog.HandlerOptions) slog.Handler{
		"json": func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewJSONHandler(w, o) },
		"text": func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewTextHandler(w, o) },
	}
	calls := []struct {
		tool     string
		readOnly bool
		outcome  string
		d        time.Duration
	}{
		{"echo", false, "ok", 1234567 * time.Nanosecond},
		{"write_note", true, "readOnly", 0},
		{"say \"hi\"\nnext line \u202eexe\u009b", false, "unknown", 0},
		{strings.Repeat("n", 2*maxAuditTool), false, "unknown", 0},
	}
	for name, newHandler := range formats {
		for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
			t.Run(name+"/"+level.String(), func(t *testing.T) {
				var buf bytes.Buffer
				root := slog.New(newHandler(&buf, &slog.HandlerOptions{Level: level, ReplaceAttr: noTime}))
				logh, log := newSessionLog(root, "sess-1", "alice")
				s := &session{log: log}
				g := &Gateway{}
				for i, named := range []bool{false, true} {
					if named {
						logh.setWorker("w-7")
					}
					for _, c := range calls {
						buf.Reset()
						auditByLogAttrs(s, c.tool, c.readOnly, c.outcome, c.d)
						want := buf.String()
						buf.Reset()
						g.audit(s, c.tool, c.readOnly, c.outcome, c.d)
						if got := buf.String(); got != want {
							t.Errorf("pass %d, tool %.20q:\n got %q\nwant %q", i, c.tool, got, want)
						}
						if wantLine := level <= slog.LevelInfo; (want != "") != wantLine {
							t.Errorf("level %s: line %q", level, want)
						}
						if want != "" && (!strings.Contains(want, "sess-1") || !strings.Contains(want, "alice") || strings.Contains(want, "w-7") != named) {
							t.Errorf("the line lacks the session's attributes: %q", want)
						}
					}
				}
			})
		}
	}
}
