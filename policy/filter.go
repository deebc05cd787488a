package policy

import (
	"encoding/json"
	"slices"
)

// FilterToolsList removes from result, the result object of a tools/list response, the
// tools a may not call. Every other field, and every kept tool, keeps its exact bytes;
// only the tools array is rebuilt (and when nothing is removed, result is returned as is).
//
// hints maps the name of each listed tool that carries annotations.readOnlyHint (kept or
// not) to that hint, so later tools/call checks can use it. A name listed more than once
// maps to true only if every listing hints true, and the filter decides on that value.
//
// Malformed input returns an error wrapping [ErrMalformedToolsList]; the caller must then
// refuse rather than pass the result on.
func (p *Policy) FilterToolsList(a Access, result json.RawMessage) (filtered json.RawMessage, hints map[string]bool, err error) {
	list, err := parseToolsList(result)
	if err != nil {
		return nil, nil, err
	}

	hints = make(map[string]bool)
	var unhinted []string
	for _, t := range list.tools {
		switch prev, seen := hints[t.name]; {
		case t.hint == nil:
			unhinted = append(unhinted, t.name)
		case seen:
			hints[t.name] = prev && *t.hint
		default:
			hints[t.name] = *t.hint
		}
	}
	for _, name := range unhinted {
		if _, ok := hints[name]; ok {
			hints[name] = false
		}
	}

	keep := make([]bool, len(list.tools))
	dropped := 0
	for i, t := range list.tools {
		var hint *bool
		if h, ok := hints[t.name]; ok {
			hint = &h
		}
		keep[i] = p.CheckTool(a, t.name, hint) == Allowed
		if !keep[i] {
			dropped++
		}
	}
	if dropped == 0 {
		return result, hints, nil
	}

	out := make([]byte, 0, len(result))
	out = append(out, result[:list.start]...)
	out = append(out, '[')
	first := true
	for i, t := range list.tools {
		if !keep[i] {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, result[t.start:t.end]...)
	}
	out = append(out, ']')
	out = append(out, result[list.end:]...)
	return slices.Clip(out), hints, nil
}
