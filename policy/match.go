package policy

import (
	"path"
	"strings"
)

// matcher matches tool names against validated names and path.Match globs. Plain names
// go to a set so a long safe list costs one lookup.
type matcher struct {
	names map[string]struct{}
	globs []string
}

func newMatcher(patterns []string) matcher {
	m := matcher{names: make(map[string]struct{}, len(patterns))}
	for _, p := range patterns {
		if strings.ContainsAny(p, `*?[\`) {
			m.globs = append(m.globs, p)
		} else {
			m.names[p] = struct{}{}
		}
	}
	return m
}

func (m matcher) match(name string) bool {
	if _, ok := m.names[name]; ok {
		return true
	}
	for _, g := range m.globs {
		// Patterns were validated in New, so the error is always nil.
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}
