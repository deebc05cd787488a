package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// logValue logs s as the attribute "v" (and as an error's text, "e") through the logger
// gemgate serve makes for format, and returns the line.
func logValue(t testing.TB, format, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	log, err := newLogger(&Config{LogLevel: "info", LogFormat: format}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("audit tools/call", "v", s, "e", errors.New(s))
	return buf.Bytes()
}

// hasInvisible reports the first rune of b, read as UTF-8, that a log viewer or terminal would
// not show as itself.
func hasInvisible(b []byte) (rune, bool) {
	for _, r := range string(b) {
		if invisible(r) {
			return r, true
		}
	}
	return 0, false
}

// A log value is often the client's or a worker's text. A JSON line carries no invisible
// control or format rune itself: each is a JSON escape (\u202e), so that a bidi override
// cannot make a terminal or viewer of the raw line show it reordered, nor a C1 control (CSI)
// drive the terminal; the line still decodes to the very same value. The text format quotes
// such a value and escapes the rune itself.
func TestLogValuesKeepInvisibleRunesVisible(t *testing.T) {
	for _, tt := range []struct{ in, escape string }{
		{"echo", ""},
		{"héllo wörld €", ""},
		{"👩\u200d💻", `\u200d`},          // ZWJ: escaped, the emoji kept
		{"safe\u202eexe.txt", `\u202e`}, // right-to-left override
		{"a\u2066b\u2069c\u200fd\u061ce", `\u2066`},
		{"csi\u009b31m", `\u009b`},
		{"tag\U000e0041", `\udb40\udc41`},
		{"zero\u200bwidth\ufeff", `\ufeff`},
	} {
		line := logValue(t, "json", tt.in)
		if r, bad := hasInvisible(line); bad {
			t.Errorf("%q: the JSON line carries %U as it is: %s", tt.in, r, line)
		}
		if !bytes.Contains(line, []byte(tt.escape)) {
			t.Errorf("%q: the line has no %s: %s", tt.in, tt.escape, line)
		}
		var got struct{ V, E string }
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("%q: %v: %s", tt.in, err, line)
		}
		if got.V != tt.in || got.E != tt.in {
			t.Errorf("%q: logged %q and error %q, want it exactly", tt.in, got.V, got.E)
		}
		text := logValue(t, "text", tt.in)
		if r, bad := hasInvisible(text); bad {
			t.Errorf("%q: the text line carries %U as it is: %s", tt.in, r, text)
		}
	}
}

// FuzzLogLineIsVisible: whatever the string, the JSON line is one line of valid JSON with no
// invisible rune, and a string of valid UTF-8 is logged exactly.
func FuzzLogLineIsVisible(f *testing.F) {
	for _, s := range []string{"echo", "safe\u202eexe", "\u009b", "\xff\xfe", "a\nb", "👩\u200d💻"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line := logValue(t, "json", s)
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("not one line: %q", line)
		}
		if r, bad := hasInvisible(line); bad {
			t.Fatalf("%q: the line carries %U: %q", s, r, line)
		}
		var got struct{ V, E string }
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if utf8.ValidString(s) && (got.V != s || got.E != s) {
			t.Fatalf("%q logged as %q / %q", s, got.V, got.E)
		}
	})
}
