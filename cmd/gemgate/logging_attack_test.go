package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"
)

// Attacks on the JSON log's escaping (logging.go visibleWriter): a client's or a worker's text
// may reach a log line by other ways than a plain string attribute, and each way must come
// out with no invisible rune in the line, as one line of valid JSON.

// hostile carries a right-to-left override, a C1 CSI and a zero-width joiner.
const hostile = "safe\u202eexe\u009b31m\u200d"

// visibleName is a Stringer over a string: the JSON handler marshals it as its string.
type visibleName string

func (n visibleName) String() string { return string(n) }

// valuer resolves to its value when logged (slog.LogValuer).
type valuer struct{ v slog.Value }

func (v valuer) LogValue() slog.Value { return v.v }

// jsonError is an error that marshals itself: the JSON handler would use its JSON.
type jsonError struct{ s string }

func (e jsonError) Error() string                { return e.s }
func (e jsonError) MarshalJSON() ([]byte, error) { return json.Marshal(e.s) }

// TestJSONLogKeepsEveryPathVisible: each way a value can reach the JSON handler, with a
// hostile string in it: grouped attributes, attributes bound with With or under WithGroup,
// resolved LogValuers, wrapped and joined errors, the message itself, the lines of the
// standard logger handed to http.Server (ErrorLog), a struct, a Stringer over a string, a
// slice, a map (key or value), a json.RawMessage and an attribute's or a group's key.
func TestJSONLogKeepsEveryPathVisible(t *testing.T) {
	for _, tt := range []struct {
		name string
		log  func(l *slog.Logger)
	}{
		{"message", func(l *slog.Logger) { l.Info(hostile) }},
		{"group", func(l *slog.Logger) { l.Info("m", slog.Group("g", slog.String("v", hostile))) }},
		{"nested group", func(l *slog.Logger) {
			l.Info("m", slog.Group("g", slog.Group("h", slog.String("v", hostile))))
		}},
		{"With", func(l *slog.Logger) { l.With("v", hostile).Info("m") }},
		{"With group", func(l *slog.Logger) { l.With(slog.Group("g", "v", hostile)).Info("m") }},
		{"WithGroup", func(l *slog.Logger) { l.WithGroup("g").Info("m", "v", hostile) }},
		{"LogValuer string", func(l *slog.Logger) { l.Info("m", "v", valuer{slog.StringValue(hostile)}) }},
		{"LogValuer group", func(l *slog.Logger) {
			l.Info("m", "v", valuer{slog.GroupValue(slog.String("w", hostile))})
		}},
		{"wrapped error", func(l *slog.Logger) { l.Info("m", "error", fmt.Errorf("calling: %w", errors.New(hostile))) }},
		{"joined error", func(l *slog.Logger) { l.Info("m", "error", errors.Join(errors.New("a"), errors.New(hostile))) }},
		{"error that marshals itself", func(l *slog.Logger) { l.Info("m", "error", jsonError{hostile}) }},
		{"ErrorLog", func(l *slog.Logger) {
			slog.NewLogLogger(l.Handler(), slog.LevelWarn).Printf("http: TLS handshake error from 192.0.2.1:1: %s", hostile)
		}},
		{"LogAttrs", func(l *slog.Logger) {
			l.LogAttrs(context.Background(), slog.LevelInfo, "m", slog.String("tool", hostile))
		}},
		{"Stringer over a string", func(l *slog.Logger) { l.Info("m", "v", visibleName(hostile)) }},
		{"struct", func(l *slog.Logger) { l.Info("m", "v", struct{ Name string }{hostile}) }},
		{"[]string", func(l *slog.Logger) { l.Info("m", "scopes", []string{"read", hostile}) }},
		{"map value", func(l *slog.Logger) { l.Info("m", "v", map[string]string{"k": hostile}) }},
		{"map key", func(l *slog.Logger) { l.Info("m", "v", map[string]int{hostile: 1}) }},
		{"json.RawMessage", func(l *slog.Logger) { l.Info("m", "id", json.RawMessage(`"`+hostile+`"`)) }},
		{"attribute key", func(l *slog.Logger) { l.Info("m", hostile, 1) }},
		{"group key", func(l *slog.Logger) { l.WithGroup(hostile).Info("m", "v", 1) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			l, err := newLogger(&Config{LogLevel: "info", LogFormat: "json"}, &buf)
			if err != nil {
				t.Fatal(err)
			}
			tt.log(l)
			line := buf.Bytes()
			if bytes.Count(line, []byte("\n")) != 1 || !json.Valid(bytes.TrimSpace(line)) {
				t.Fatalf("not one line of JSON: %q", line)
			}
			if r, bad := hasInvisible(line); bad {
				t.Errorf("the JSON line carries %U as it is: %s", r, line)
			}
		})
	}
}

// TestTextLogKeepsEveryPathVisible: the text handler quotes what is not printable itself,
// keys and values of any kind alike; pinned, since gemgate relies on it.
func TestTextLogKeepsEveryPathVisible(t *testing.T) {
	var buf bytes.Buffer
	l, err := newLogger(&Config{LogLevel: "info", LogFormat: "text"}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	l.Info(hostile, hostile, 1, "v", struct{ Name string }{hostile}, "s", []string{hostile},
		"m", map[string]string{hostile: hostile}, "n", visibleName(hostile), "e", fmt.Errorf("x: %w", errors.New(hostile)))
	l.WithGroup(hostile).With("w", hostile).Info("m", slog.Group("g", "v", hostile))
	if r, bad := hasInvisible(buf.Bytes()); bad {
		t.Errorf("the text lines carry %U as it is: %s", r, buf.Bytes())
	}
	if n := bytes.Count(buf.Bytes(), []byte("\n")); n != 2 {
		t.Errorf("%d lines, want 2: %q", n, buf.Bytes())
	}
}

// TestJSONLogIllFormedUTF8: bytes that are not UTF-8 are logged as U+FFFD, never as
// themselves: a lone 0x9B is CSI to a terminal that reads Latin-1, an overlong or a
// surrogate's encoding is a control to a lax decoder. Valid text around them is kept.
func TestJSONLogIllFormedUTF8(t *testing.T) {
	for _, s := range []string{
		"a\x9b31mb",          // a lone C1 byte
		"a\xc2\x9b31mb",      // U+009B, well formed: spelled out
		"a\xc0\x9bb",         // overlong ESC
		"a\xed\xa0\x80b",     // a surrogate's encoding
		"a\xe2\x80b",         // U+202E cut short
		"a\xe2\x80\xaeb\xff", // U+202E then a stray byte
		"\xf4\x90\x80\x80",   // beyond U+10FFFF
	} {
		line := logValue(t, "json", s)
		var got struct{ V, E string }
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("%q: %v: %q", s, err, line)
		}
		if r, bad := hasInvisible(line); bad {
			t.Errorf("%q: the line carries %U: %q", s, r, line)
		}
		for i := 0; i < len(line); i++ {
			if c := line[i]; c >= 0x80 && c < 0xc0 && (i == 0 || line[i-1] < 0x80) {
				t.Errorf("%q: a stray continuation byte %#x at %d: %q", s, c, i, line)
			}
		}
		if !bytes.HasPrefix([]byte(got.V), []byte("a")) && s[0] == 'a' {
			t.Errorf("%q: the valid text was lost: %q", s, got.V)
		}
	}
}

// The audit line of every tools/call goes through visibleWriter: its cost, with and
// without, for an ASCII tool name (the common case), a non-ASCII one, and one with a bidi
// override.
func BenchmarkAuditLine(b *testing.B) {
	for _, tool := range []struct{ name, s string }{
		{"ascii", "get_customer_orders"},
		{"non-ascii", "commandes_clients_déjà_payées"},
		{"bidi", "orders\u202etxt.exe"},
	} {
		for _, filter := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/filter=%v", tool.name, filter), func(b *testing.B) {
				var w io.Writer = io.Discard
				if filter {
					w = visibleWriter{w}
				}
				l := slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo})).With("session", "3f2a9c1e", "user", "alice", "client", "192.0.2.1")
				b.ReportAllocs()
				for b.Loop() {
					l.LogAttrs(context.Background(), slog.LevelInfo, "audit tools/call",
						slog.String("tool", tool.s), slog.Bool("read_only", false),
						slog.String("outcome", "ok"), slog.Duration("duration", 1500*time.Microsecond))
				}
			})
		}
	}
}
