package wire

// JSON read as encoding/json (and the Go SDKs, which use it) reads it, without decoding a
// whole message to learn one member: both eras ask a worker's answer whether it is a tool error
// or input-required, and a megabyte answer need not be decoded to learn it is neither.

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/gemgate/gemgate/jsonrpc"
)

// LastMember is the raw value of obj's member key as encoding/json reads obj into a map: the
// last member whose key decodes to key exactly. false when there is none, or obj is not an
// object. It keeps and decodes nothing but keys that may be key.
func LastMember(obj []byte, key string) (value json.RawMessage, found bool) {
	ok := jsonrpc.EachMember(obj, func(k, v []byte) {
		if DecodesTo(k, key) {
			value, found = v, true
		}
	})
	return value, ok && found
}

// DecodesTo reports whether the JSON string s (quotes included, valid JSON) decodes to want,
// an ASCII string. Without an escape a string decodes to its own bytes, but for ill-formed
// UTF-8, which becomes U+FFFD and so can never equal ASCII: the bytes decide.
func DecodesTo(s []byte, want string) bool {
	inner := s[1 : len(s)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == want
	}
	var d string
	return json.Unmarshal(s, &d) == nil && d == want
}

// LastFoldedString is the resultType that decoding obj (valid JSON) into a struct gives:
// encoding/json matches a member's key to the field without regard to case (strings.EqualFold,
// its folding), each match overwrites the field, and a null or a value that is not a string
// leaves it as it was. "" when there is none, or obj is not an object. It decodes nothing but
// the keys that may fold to resultType and the one value it returns.
func LastFoldedString(obj []byte) string {
	var last []byte
	if !jsonrpc.EachMember(obj, func(k, v []byte) {
		if v[0] == '"' && foldsTo(k, "resultType") {
			last = v
		}
	}) || last == nil {
		return ""
	}
	if v := last[1 : len(last)-1]; bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		switch string(v) { // the two every sessionless answer names cost nothing
		case "complete":
			return "complete"
		case "input_required":
			return "input_required"
		}
		return string(v)
	}
	var s string
	if json.Unmarshal(last, &s) != nil {
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

// MayHaveKey reports whether raw, JSON that jsonrpc.Parse validated, may have a member that
// encoding/json reads as key: by its exact name, or by the case folding it applies to struct
// fields. false means decoding raw to look for key would find nothing, so a megabyte answer
// need not be decoded to learn it is not input-required, or not a tool error. It looks only
// at the strings, one IndexByte between quotes: a string too long to spell key even in
// escapes is passed over, a short one with an escape is decoded first.
func MayHaveKey(raw []byte, key string) bool {
	for rest := raw; ; {
		i := bytes.IndexByte(rest, '"')
		if i < 0 {
			return false
		}
		quoted := rest[i:]
		rest = rest[i+1:]
		j := closingQuote(rest)
		if j < 0 {
			return true // not JSON after all: the decoder is to say what it is
		}
		if s := rest[:j]; len(s) <= maxEscapedRune*len(key) {
			if bytes.IndexByte(s, '\\') >= 0 {
				var dec string
				if json.Unmarshal(quoted[:j+2], &dec) != nil || mayFoldTo([]byte(dec), key) {
					return true
				}
			} else if mayFoldTo(s, key) {
				return true
			}
		}
		rest = rest[j+1:]
	}
}

// maxEscapedRune is the most bytes one rune takes inside a JSON string: a surrogate pair of
// \u escapes.
const maxEscapedRune = 12

// closingQuote is the index in s, what follows a string's opening quote, of its closing quote:
// the first quote not escaped (preceded by an even number of backslashes); -1 if none.
func closingQuote(s []byte) int {
	for off := 0; ; {
		j := bytes.IndexByte(s[off:], '"')
		if j < 0 {
			return -1
		}
		j += off
		k := j
		for k > off && s[k-1] == '\\' {
			k--
		}
		// A run of backslashes that reaches back to off began after an unescaped quote's
		// successor or at the string's start, so counting from off is counting it whole.
		if (j-k)%2 == 0 {
			return j
		}
		off = j + 1
	}
}

// mayFoldTo: s has key's length in runes, and each of its runes is key's in ASCII of either
// case, or not ASCII at all (some, such as U+017F, fold to ASCII letters: counted as a match).
func mayFoldTo(s []byte, key string) bool {
	if len(s) < len(key) || len(s) > utf8.UTFMax*len(key) {
		return false
	}
	k := 0
	for i := 0; i < len(s); k++ {
		r, n := utf8.DecodeRune(s[i:])
		i += n
		if k == len(key) {
			return false
		}
		if r < utf8.RuneSelf && lowerASCII(byte(r)) != lowerASCII(key[k]) {
			return false
		}
	}
	return k == len(key)
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// IsObject reports whether raw, valid JSON, is an object.
func IsObject(raw []byte) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// AddMember appends "key":value to the object obj; key needs no escaping.
func AddMember(obj []byte, key, value string) []byte {
	obj = obj[:len(obj)-1] // the closing brace
	if len(obj) > 1 {
		obj = append(obj, ',')
	}
	obj = append(append(append(append(obj, '"'), key...), `":`...), value...)
	return append(obj, '}')
}
