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
	switch v {
	case Allowed:
		return "allowed"
	case DeniedReadOnly:
		return "readOnly"
	case DeniedForbidden:
		return "forbidden"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}
