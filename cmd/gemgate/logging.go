package main

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"unicode"
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
		opts.ReplaceAttr = visibleAttr
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		// The text handler quotes a value with a rune that is not printable, escaping it.
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log_format: %q is not json or text", c.LogFormat)
}

// visibleAttr is the JSON handler's ReplaceAttr: a string value (or error text) that carries
// an invisible control is logged with that rune spelled out as \uXXXX. Log values are often
// the client's or a worker's text (a tool name, a worker's stderr line), and JSON escapes
// only C0 controls and U+2028/U+2029: a bidi override (U+202E) would make a log viewer show
// the line reordered, a C1 control (U+009B, CSI) can drive a terminal that shows the log.
func visibleAttr(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindString:
		if s := a.Value.String(); !isVisible(s) {
			a.Value = slog.StringValue(visible(s))
		}
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok {
			if s := err.Error(); !isVisible(s) {
				a.Value = slog.StringValue(visible(s))
			}
		}
	}
	return a
}

// isVisible reports whether s has no rune visible would spell out; ASCII is checked by byte.
func isVisible(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			for _, r := range s[i:] {
				if invisible(r) {
					return false
				}
			}
			return true
		}
	}
	return true
}

// invisible is a control or format rune beyond ASCII (JSON escapes those within it): C1
// controls, bidi marks and overrides, zero-width characters, tags.
func invisible(r rune) bool {
	return r >= utf8.RuneSelf && (unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r))
}

// visible is s with each invisible rune written as \uXXXX (\UXXXXXXXX beyond the BMP).
func visible(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		if !invisible(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRuneToASCII(r) // '\u202e'
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}
