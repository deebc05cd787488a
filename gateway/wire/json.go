package wire

// JSON read as encoding/json (and the Go SDKs) reads it, without decoding a whole megabyte
// answer to learn whether it is a tool error or input-required.

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/gemgate/gemgate/jsonrpc"
)

// DecodesTo reports whether the JSON string s (quoted, valid) decodes to want, an ASCII string.
// Without an escape the bytes decide (ill-formed UTF-8 becomes U+FFFD, never ASCII).
func DecodesTo(s []byte, want string) bool {
	inner := s[1 : len(s)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == want
	}
	var d string
	return json.Unmarshal(s, &d) == nil && d == want
}

// LastFoldedString is the resultType decoding obj into a struct gives: the last string
// member whose key folds to it.
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
		switch string(v) { // the common two allocate nothing
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

// foldsTo reports whether the JSON string s decodes to one EqualFold to key, an ASCII string.
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
// encoding/json reads as key, exactly or case-folded: false means decoding would find none.
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

// maxEscapedRune is the most bytes one rune takes in a JSON string: a \u surrogate pair.
const maxEscapedRune = 12

// closingQuote is the index in s, after an opening quote, of the first unescaped quote; or -1.
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
		// A run reaching back to off began at the string's start or after a quote: it is whole.
		if (j-k)%2 == 0 {
			return j
		}
		off = j + 1
	}
}

// mayFoldTo: s has key's runes in either ASCII case, or not ASCII (U+017F folds to 's').
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
