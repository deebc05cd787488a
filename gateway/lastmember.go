package gateway

import (
	"bytes"
	"encoding/json"

	"github.com/gemgate/gemgate/jsonrpc"
)

// lastMember is the raw value that decoding obj (valid JSON, an object) into a
// map[string]json.RawMessage would give for key: the last member whose key decodes to key
// exactly (encoding/json keeps the last of repeated keys). A worker's result is read this way
// where gemgate must see it as encoding/json does, without decoding every member into a map:
// that cost 16 allocations on every answer of a sessionless worker, which always names its
// resultType.
func lastMember(obj []byte, key string) (json.RawMessage, bool) {
	i := jsonrpc.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	var found json.RawMessage
	ok := false
	for i++; ; {
		i = jsonrpc.SkipSpace(obj, i)
		if obj[i] == '}' {
			return found, ok
		}
		if obj[i] == ',' {
			i = jsonrpc.SkipSpace(obj, i+1)
		}
		start := i
		i = jsonrpc.SkipValue(obj, i) // the key, a string
		match := decodesTo(obj[start:i], key)
		i = jsonrpc.SkipSpace(obj, i) + 1 // ':'
		i = jsonrpc.SkipSpace(obj, i)
		vStart := i
		i = jsonrpc.SkipValue(obj, i)
		if match {
			found, ok = obj[vStart:i:i], true
		}
	}
}

// decodesTo reports whether the JSON string s (quotes included, valid JSON) decodes to want,
// an ASCII string. Without an escape a string decodes to its own bytes, but for ill-formed
// UTF-8, which becomes U+FFFD and so can never equal ASCII: the bytes decide.
func decodesTo(s []byte, want string) bool {
	inner := s[1 : len(s)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == want
	}
	var d string
	return json.Unmarshal(s, &d) == nil && d == want
}
