package jsonrpc

import (
	"encoding/json"
	"hash/maphash"
)

// Editing an object without decoding it. A large message (a 1 MiB tool result) passes the
// gateway with a member added or taken out; decoding it into a map and encoding the map again
// would cost two full passes, a copy of every value, and would reorder its keys. These copy
// the members as they are, byte for byte, and touch only the ones named.

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

// ParamsObject is m.Params read strictly, as ReadObject(m.Params, "params") reads them: from
// Parse's reading while Params are still the bytes Parse read (the common case: the gateway
// reads a client's params at several steps, and they may be a megabyte).
func (m *Message) ParamsObject() (Object, error) {
	if m.paramsWalked && m.paramsUnchanged() {
		return newObject("params", m.params)
	}
	return ReadObject(m.Params, "params")
}

// EditParams is EditObject on m.Params, on Parse's reading of them (ParamsObject).
func (m *Message) EditParams(edit func(key string, value json.RawMessage) json.RawMessage) (json.RawMessage, error) {
	o, err := m.ParamsObject()
	if err != nil {
		return nil, err
	}
	return o.Edit(edit), nil
}

// paramsUnchanged reports whether m.Params are the bytes Parse read: the same memory, and the
// same contents (a hash, far cheaper than reading them again).
func (m *Message) paramsUnchanged() bool {
	return sameBytes(m.Params, m.paramsRead) && hashParams(m.Params) == m.paramsSum
}

// sameBytes reports whether a and b are the same bytes in memory, not merely equal ones.
func sameBytes(a, b []byte) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
}

var paramsSeed = maphash.MakeSeed()

func hashParams(b []byte) uint64 { return maphash.Bytes(paramsSeed, b) }
