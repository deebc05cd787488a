package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/gemgate/gemgate/jsonrpc"
)

// lastMember is the raw value that decoding obj (valid JSON, an object) into a
// map[string]json.RawMessage would give for key: the last member whose key decodes to key
// exactly (encoding/json keeps the last of repeated keys). A worker's result is read this way
// where gemgate must see it as encoding/json does, without decoding every member into a map:
// that cost 16 allocations on every answer of a sessionless worker, which always names its
// resultType.
func lastMember(obj []byte, key string) (json.RawMessage, bool) {
	return lastMemberWhere(obj, func(k []byte) bool { return decodesTo(k, key) }, nil)
}

// lastMemberWhere is the raw value of the last member of obj (valid JSON) whose key (a JSON
// string, quotes included) keyOK accepts and whose value valueOK accepts (nil: any); false
// when there is none, or obj is not an object. It keeps nothing per member.
func lastMemberWhere(obj []byte, keyOK, valueOK func([]byte) bool) (json.RawMessage, bool) {
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
		match := keyOK(obj[start:i])
		i = jsonrpc.SkipSpace(obj, i) + 1 // ':'
		i = jsonrpc.SkipSpace(obj, i)
		vStart := i
		i = jsonrpc.SkipValue(obj, i)
		if match && (valueOK == nil || valueOK(obj[vStart:i])) {
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

// lastFoldedString is what decoding obj (valid JSON) into a struct whose one string field is
// named key gives that field: encoding/json matches a member's key to the field without
// regard to case (strings.EqualFold, its folding), and each match overwrites the field, but
// a null, or a value that is not a string, leaves it as it was. So: the last member whose key
// folds to key and whose value is a string, decoded; "" when there is none, or obj is not an
// object. It keeps nothing per member, so a result of many members costs no more than one.
func lastFoldedString(obj []byte, key string) string {
	found, ok := lastMemberWhere(obj, func(k []byte) bool { return foldsTo(k, key) },
		func(v []byte) bool { return v[0] == '"' })
	if !ok {
		return ""
	}
	if v := found[1 : len(found)-1]; bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		// A plain string is its bytes; the two every sessionless answer names cost nothing.
		switch string(v) {
		case "complete":
			return "complete"
		case "input_required":
			return "input_required"
		}
		return string(v)
	}
	var s string
	if json.Unmarshal(found, &s) != nil {
		return ""
	}
	return s
}

// foldsTo reports whether the JSON string s (quotes included, valid JSON) decodes to a string
// strings.EqualFold holds equal to key, an ASCII string. Only a string that may spell key
// (mayFoldTo, or short enough to in escapes) is decoded; ill-formed UTF-8 decodes to U+FFFD,
// which folds to no ASCII letter, so a plain string is compared as its bytes.
func foldsTo(s []byte, key string) bool {
	inner := s[1 : len(s)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return utf8.Valid(inner) && mayFoldTo(inner, key) && strings.EqualFold(string(inner), key)
	}
	if len(inner) > maxEscapedRune*len(key) {
		return false
	}
	var d string
	return json.Unmarshal(s, &d) == nil && strings.EqualFold(d, key)
}
