package pool

import (
	"strconv"
	"strings"
)

// Grant is the scope and audience sets the member's worker was started with, from its key.
// ok is false once the member is detached.
func (m *Member) Grant() (scopes, audience []string, ok bool) {
	s := m.slot()
	if s == nil {
		return nil, nil, false
	}
	return grantValues(s.key.Scopes), grantValues(s.key.Audience), true
}

// grantValues reads back a set grantSet wrote; nil for an empty set, and for a malformed
// one (grantSet writes none).
func grantValues(set string) []string {
	var out []string
	for set != "" {
		n, rest, found := strings.Cut(set, ":")
		size, err := strconv.Atoi(n)
		if !found || err != nil || size < 0 || size > len(rest) {
			return nil
		}
		out = append(out, rest[:size])
		set = rest[size:]
	}
	return out
}
