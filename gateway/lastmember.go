package gateway

import (
	"bytes"
	"encoding/json"
)

// lastMember is the raw value of obj's member key as encoding/json reads obj into a map: the
// last member whose key decodes to key exactly. false when there is none, or obj is not an
// object.
func lastMember(obj []byte, key string) (json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(obj, &fields) != nil {
		return nil, false
	}
	v, ok := fields[key]
	return v, ok
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

// lastFoldedString is the resultType that decoding obj (valid JSON) into a struct gives:
// encoding/json matches a member's key to the field without regard to case, each match
// overwrites the field, and a null or a value that is not a string leaves it as it was. ""
// when there is none, or obj is not an object.
func lastFoldedString(obj []byte) string {
	var v struct {
		ResultType string `json:"resultType"`
	}
	_ = json.Unmarshal(obj, &v) // a member of another type is skipped, the rest still read
	return v.ResultType
}
