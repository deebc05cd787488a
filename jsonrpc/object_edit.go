package jsonrpc

import "encoding/json"

// Edit is EditObject on an object already read: o's members, each passed through edit, in
// order (edit returns the value to keep, new valid JSON, or nil to leave the member out).
// The gateway reads a request's params once, for its checks, and edits that same reading on
// the way to the worker, instead of reading (and folding every key of) the params again.
// o must still describe the bytes it was read from: its values are slices of them.
func (o Object) Edit(edit func(key string, value json.RawMessage) json.RawMessage) json.RawMessage {
	n := 2
	for _, m := range o.members {
		n += len(m.rawKey) + len(m.value) + 2
	}
	out := make([]byte, 0, n+16)
	out = append(out, '{')
	for _, m := range o.members {
		v := edit(m.key, m.value)
		if v == nil {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(out, m.rawKey...), ':')
		out = append(out, v...)
	}
	return append(out, '}')
}
