package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

func newLogger(c *Config, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return nil, fmt.Errorf("log_level: %q is not debug, info, warn or error", c.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(c.LogFormat) {
	case "json":
		return slog.New(slog.NewJSONHandler(visibleWriter{w}, opts)), nil
	case "text":
		// The text handler quotes a key or value with a rune that is not printable, and
		// escapes the rune.
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log_format: %q is not json or text", c.LogFormat)
}

// visibleWriter writes each invisible rune of the JSON handler's lines as a JSON escape
// (\u202e), so the line decodes to the same values but cannot reorder or drive the terminal
// that shows it (a bidi override, a C1 control). Log values are often a client's or a
// worker's text, and JSON itself escapes only C0 controls and U+2028/U+2029. Outside ASCII,
// JSON has text only inside strings, where the escape means the rune itself. The handler
// writes each record with one Write, so no rune is split between two.
type visibleWriter struct{ w io.Writer }

func (v visibleWriter) Write(p []byte) (int, error) {
	i := firstInvisible(p)
	if i < 0 {
		return v.w.Write(p)
	}
	out := make([]byte, 0, len(p)+32)
	out = append(out, p[:i]...)
	for rest := p[i:]; len(rest) > 0; {
		r, n := utf8.DecodeRune(rest)
		if invisible(r) {
			out = appendEscape(out, r)
		} else {
			out = append(out, rest[:n]...)
		}
		rest = rest[n:]
	}
	if _, err := v.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// firstInvisible is the index of the first invisible rune of p, -1 if none.
func firstInvisible(p []byte) int {
	for i := 0; i < len(p); {
		if i+8 <= len(p) && binary.LittleEndian.Uint64(p[i:])&0x8080808080808080 == 0 {
			i += 8
			continue
		}
		if p[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(p[i:])
		if invisible(r) {
			return i
		}
		i += n
	}
	return -1
}

// invisible is a control or format rune beyond ASCII (JSON escapes those within it): C1
// controls, bidi marks and overrides, zero-width characters, tags.
func invisible(r rune) bool {
	return r >= utf8.RuneSelf && (unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r))
}

// appendEscape appends r as a JSON escape: \uXXXX, or a surrogate pair beyond the BMP.
func appendEscape(out []byte, r rune) []byte {
	if r > 0xFFFF {
		r1, r2 := utf16.EncodeRune(r)
		return fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
	}
	return fmt.Appendf(out, `\u%04x`, r)
}
