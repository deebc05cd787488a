package jsonrpc

import "encoding/json"

// Edit is EditObject on an object already read, so params checked once are not read again
// to be edited. o must still describe the bytes it was read from: its values are slices of
// them.
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
