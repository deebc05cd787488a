package jsonrpc

import (
	"encoding/json"
	"hash/maphash"
)

// Editing an object without decoding it: members are copied byte for byte and in order, and
// only the ones named are touched. A map round trip would reorder keys and cost a full decode.

// EditObject returns the object raw with each member passed through edit, in order: edit
// returns the member's value (the one given, or new valid JSON), or nil to leave the member
// out. Members edit keeps keep their bytes, key and value. raw is read strictly (ReadObject):
// a repeated key is a *KeyError, a value that is not an object a *TypeError.
func EditObject(raw json.RawMessage, name string, edit func(key string, value json.RawMessage) json.RawMessage) (json.RawMessage, error) {
	o, err := ReadObject(raw, name)
	if err != nil {
		return nil, err
	}
	return o.Edit(edit), nil
}

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

// DropParams forgets m's params and Parse's reading of them, and only those fields: a message
// kept past its request (a call its client gave up, until the worker answers) keeps none of
// the request's body through them, while its id may still be read elsewhere.
func (m *Message) DropParams() { m.Params, m.params, m.paramsRead, m.paramsSum = nil, nil, nil, 0 }

// ParamsObject is m.Params read strictly, as ReadObject(m.Params, "params") reads them. It
// reuses Parse's reading while Params are still the bytes Parse read.
func (m *Message) ParamsObject() (Object, error) {
	if m.paramsUnchanged() {
		return newObject("params", m.params)
	}
	return ReadObject(m.Params, "params")
}

// paramsUnchanged reports whether m.Params are the bytes Parse read as an object: the same
// memory, and the same contents (by hash).
func (m *Message) paramsUnchanged() bool {
	return sameBytes(m.Params, m.paramsRead) && hashParams(m.Params) == m.paramsSum
}

// sameBytes reports whether a and b are the same bytes in memory, not merely equal ones.
func sameBytes(a, b []byte) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
}

var paramsSeed = maphash.MakeSeed()

func hashParams(b []byte) uint64 { return maphash.Bytes(paramsSeed, b) }
