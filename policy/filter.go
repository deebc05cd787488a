package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// FilterList removes from result, the result object of the list method's response, the
// items a may not list: tools/list (by the read-only gate and tool rules on each tool's
// name), prompts/list (by prompt_rules on each prompt's name), resources/list and
// resources/templates/list (by resource_rules on each resource's uri, each template's
// uriTemplate; without such rules, the result is returned as is). Another method is an
// error. Every other field, and every kept item, keeps its exact bytes; only the array is
// rebuilt (and when nothing is removed, result is returned as is). When every item is
// removed, and the result has no _meta of its own, a _meta entry "gemgate/hidden" says why,
// for the operator ([HiddenMetaKey]).
//
// hints, a tool list's only, maps the name of each listed tool that carries annotations
// (kept or not) to them, so later tools/call checks can use them. A name listed more than
// once gets the cautious merge of its listings (read-only only if every listing says so),
// and the filter decides on that value.
//
// n counts the items a may use (Allowed), those only the write scope would show it
// (ReadOnly), and all of them (Total); a list of a kind nothing decides on is not read, and
// its counts are zero.
//
// Malformed input returns an error wrapping [ErrMalformedList]; the caller must then refuse
// rather than pass the result on.
func (p *Policy) FilterList(method string, a Access, result json.RawMessage) (filtered json.RawMessage, hints map[string]Hints, n ListCounts, err error) {
	shape, ok := shapeOf(method)
	if !ok {
		return nil, nil, n, malformed("%s is not a list gemgate filters", method)
	}
	if shape.kind != KindTool && len(p.rules[shape.kind]) == 0 {
		return result, nil, n, nil // nothing decides on it: no read-only gate, no rule
	}
	list, err := parseList(result, shape)
	if err != nil {
		return nil, nil, n, err
	}
	hints = listHints(list.tools)

	keep := make([]bool, len(list.tools))
	var why []string
	kn := &known{map[*rule]bool{}, map[*rule]bool{}} // one list, one access
	n.Total = len(list.tools)
	for i, t := range list.tools {
		verdict, reason := p.explain(shape.kind, a, t.name, HintOf(hints, t.name), kn)
		switch verdict {
		case Allowed:
			n.Allowed++
		case DeniedReadOnly:
			n.ReadOnly++
		}
		if keep[i] = verdict == Allowed; !keep[i] && !slices.Contains(why, reason) {
			why = append(why, reason)
		}
	}
	if len(why) == 0 {
		return result, hints, n, nil
	}

	out := append(make([]byte, 0, len(result)), result[:list.start+1]...) // through the array's '['
	items := len(out)
	for i, t := range list.tools {
		if !keep[i] {
			continue
		}
		if len(out) > items {
			out = append(out, ',')
		}
		out = append(out, result[t.start:t.end]...)
	}
	out = append(append(out, ']'), result[list.end:]...)
	if at := list.metaAt; !slices.Contains(keep, true) && at >= 0 {
		if at > list.start { // after the array, which is now "[]"
			at -= list.end - list.start - 2
		}
		out = withHiddenMeta(out, at, p.hiddenMeta(shape.plural, len(list.tools), why))
	}
	return slices.Clip(out), hints, n, nil
}

// ListCounts are what FilterList decided of a list's items.
type ListCounts struct{ Allowed, ReadOnly, Total int }

// HiddenMetaKey is the _meta key of a list result whose every item gemgate hid.
const HiddenMetaKey = "gemgate/hidden"

// hiddenMeta is the _meta member that says why all n items (plural: "tools", "prompts"...)
// of a list answer (one page of a paged list) are hidden, given the distinct reasons
// ExplainKind gave.
func (p *Policy) hiddenMeta(plural string, n int, why []string) []byte {
	for i, w := range why {
		if strings.HasPrefix(w, "read-only") {
			why[i] = "the token is read-only (no scope " + p.write + ") and the operator vouched for none of them " +
				"(read_only_tools, trust_read_only_hints, or a preset from policy/presets)"
		}
	}
	msg := fmt.Sprintf("gemgate hides all %d %s the worker listed in this answer from this token: %s", n, plural, strings.Join(why, "; "))
	b, _ := json.Marshal(map[string]string{"explanation": msg})
	return append([]byte(`"`+HiddenMetaKey+`":`), b...)
}

// withHiddenMeta adds member to the result's _meta object, whose '{' is at metaAt, or a
// _meta holding it when metaAt is 0.
func withHiddenMeta(result []byte, metaAt int, member []byte) []byte {
	if metaAt == 0 {
		metaAt = bytes.IndexByte(result, '{')
		member = append(append([]byte(`"_meta":{`), member...), '}')
	}
	rest := result[metaAt+1:]
	if bytes.TrimLeft(rest, " \t\r\n")[0] != '}' { // valid JSON: the object closes
		member = append(member, ',')
	}
	return slices.Concat(result[:metaAt+1], member, rest)
}

// listHints merges the annotations of every listing of each annotated name.
func listHints(tools []listedTool) map[string]Hints {
	hints := make(map[string]Hints)
	for _, t := range tools {
		if t.hints == nil {
			continue
		}
		if prev, seen := hints[t.name]; seen {
			hints[t.name] = prev.And(*t.hints)
		} else {
			hints[t.name] = *t.hints
		}
	}
	for _, t := range tools {
		if prev, seen := hints[t.name]; seen && t.hints == nil {
			hints[t.name] = prev.And(defaultHints)
		}
	}
	return hints
}

// ExplainTools writes, for each item of result, whether a may list and use it and what
// decided: a rule's name, or the read-only gate's reason. result is the result object of a
// tools/list, prompts/list, resources/list or resources/templates/list answer, told apart
// by its array (tools, prompts, resources, resourceTemplates): it must have exactly one.
func (p *Policy) ExplainTools(w io.Writer, a Access, result json.RawMessage) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(result, &top); err != nil {
		return malformed("%v", err)
	}
	var shape *listShape
	for i := range listShapes {
		if _, ok := top[listShapes[i].array]; ok {
			if shape != nil {
				return malformed("both %s and %s: which list is it?", shape.array, listShapes[i].array)
			}
			shape = &listShapes[i]
		}
	}
	if shape == nil {
		return malformed("no tools, prompts, resources or resourceTemplates array")
	}
	list, err := parseList(result, shape)
	if err != nil {
		return err
	}
	hints := listHints(list.tools)
	for _, t := range list.tools {
		verdict, why := p.ExplainKind(shape.kind, a, t.name, HintOf(hints, t.name))
		word := "ALLOWED"
		if verdict != Allowed {
			word = "HIDDEN"
		}
		fmt.Fprintf(w, "%-8s %-32s %s\n", word, t.name, why)
	}
	return nil
}

// HintOf is the hints of name in hints (as FilterList returns them), nil when it has none.
func HintOf(hints map[string]Hints, name string) *Hints {
	if h, ok := hints[name]; ok {
		return &h
	}
	return nil
}
