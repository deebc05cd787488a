package policy

// Hints are the annotations a worker declared for a tool (MCP's ToolAnnotations), each
// with the protocol's default where the worker said nothing: not read-only, destructive,
// not idempotent, open world. They are the worker's claims: the read-only gate counts
// ReadOnly only when the operator trusts hints, and rules see them only then.
type Hints struct {
	ReadOnly, Destructive, Idempotent, OpenWorld bool
}

// defaultHints are MCP's defaults for a tool without annotations.
var defaultHints = Hints{Destructive: true, OpenWorld: true}

// DefaultHints are MCP's defaults for a tool listed without annotations: what a worker that
// lists a tool again without them says of it.
func DefaultHints() Hints { return defaultHints }

// And merges the hints of two listings of one name the cautious way: read-only and
// idempotent only if both say so, destructive and open world if either does (two listings on
// one page of a list, or on two pages).
func (h Hints) And(o Hints) Hints {
	return Hints{
		ReadOnly:    h.ReadOnly && o.ReadOnly,
		Destructive: h.Destructive || o.Destructive,
		Idempotent:  h.Idempotent && o.Idempotent,
		OpenWorld:   h.OpenWorld || o.OpenWorld,
	}
}

// annotationNames are the annotation keys gemgate reads, as MCP spells them.
var annotationNames = [...]string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}

func (h *Hints) field(i int) *bool {
	return [...]*bool{&h.ReadOnly, &h.Destructive, &h.Idempotent, &h.OpenWorld}[i]
}

// celMap is the annotations variable of a rule.
func (h Hints) celMap() map[string]bool {
	m := make(map[string]bool, len(annotationNames))
	for i, n := range annotationNames {
		m[n] = *h.field(i)
	}
	return m
}
