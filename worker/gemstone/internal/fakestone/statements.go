package main

import (
	"regexp"
	"strings"
)

// statements splits Smalltalk source (comments already stripped) into its top-level
// statements: at a period outside string literals and outside [], () and {}. Each comes back
// with its white space folded to single spaces, so that the fake compares what the relay sends,
// not how it is laid out.
func statements(src string) []string {
	var out []string
	var b strings.Builder
	depth, inString := 0, false
	flush := func() {
		if s := strings.Join(strings.Fields(b.String()), " "); s != "" {
			out = append(out, s)
		}
		b.Reset()
	}
	for _, c := range src {
		switch {
		case inString:
			inString = c != '\''
		case c == '\'':
			inString = true
		case c == '[' || c == '(' || c == '{':
			depth++
		case c == ']' || c == ')' || c == '}':
			depth--
		case c == '.' && depth == 0:
			flush()
			continue
		}
		b.WriteRune(c)
	}
	flush()
	return out
}

var assignment = regexp.MustCompile(`^(\w+) := (.*)$`)

// definitions are the run block's assignments, name to expression (the last one of a name).
func definitions(stmts []string) map[string]string {
	defs := map[string]string{}
	for _, s := range stmts {
		if m := assignment.FindStringSubmatch(s); m != nil {
			defs[m[1]] = m[2]
		}
	}
	return defs
}

// stringLiteral reads the Smalltalk string literal at the start of s (quoted, a quote doubled
// inside it): its value, and whether there was one.
func stringLiteral(s string) (string, bool) {
	if !strings.HasPrefix(s, "'") {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), true
	}
	return "", false
}
