package policy

import "strconv"

// Verdict is the answer of [Policy.CheckTool].
type Verdict int

const (
	// Allowed: the tool may be listed and called.
	Allowed Verdict = iota
	// DeniedReadOnly: the session is read-only and nobody vouched for the tool; the
	// write scope would allow it (403 insufficient_scope naming the write scope).
	DeniedReadOnly
	// DeniedForbidden: the access lacks a scope that unlocks the tool, or is not
	// usable at all.
	DeniedForbidden
)

// String returns the label used in error data and metrics: "allowed", "readOnly" or
// "forbidden".
func (v Verdict) String() string {
	if names := [...]string{"allowed", "readOnly", "forbidden"}; v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}
