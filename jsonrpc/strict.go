package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	textclip "github.com/gemgate/gemgate/internal/clip"
)

// The strict reader. Every field the gateway decides on (the envelope, a tool's name, a
// progress token, a cancelled request's id, the protocol version a client asks for) is read
// here and nowhere else, because the gateway must read a message exactly as the worker will.
// encoding/json does not: it matches keys without regard to case and keeps the last of
// repeated keys, while the MCP SDKs match keys exactly. {"name":"destroy","Name":"peek"}
// would be "peek" to encoding/json and "destroy" to a worker. So an Object read here:
//
//   - is looked up by exact key only;
//   - refuses a key repeated, exactly or in another case (Unicode simple folding, the
//     folding encoding/json applies), since readers disagree on which one counts;
//   - can refuse keys that differ only in case from a key the gateway reads (Exact), since
//     a reader that folds case would take them for it.
//
// Refusals wrap ErrInvalid: the gateway answers -32600 and forwards nothing.

// MaxDepth bounds how deeply a client message may nest objects and arrays. The SDKs allow far
// more, but no MCP message needs it, and deep nesting has crashed workers.
const MaxDepth = 64

// KeyError reports a key that makes a message ambiguous: a repeat, exact or in another case,
// of another key of the same object, or a case variant of a key the gateway reads.
type KeyError struct {
	Object string // where: "message", "params", "params._meta", ...
	Key    string // the offending key as decoded
	Other  string // the key it collides with
}

func (e *KeyError) Error() string {
	if e.Key == e.Other {
		return fmt.Sprintf("%s: key %s appears more than once in %s", ErrInvalid, strconv.Quote(clip(e.Key)), e.Object)
	}
	return fmt.Sprintf("%s: key %s in %s is ambiguous with %s; keys must match exactly, once",
		ErrInvalid, strconv.Quote(clip(e.Key)), e.Object, strconv.Quote(clip(e.Other)))
}

func (e *KeyError) Unwrap() error { return ErrInvalid }

// errTooDeep refuses a client message nested deeper than MaxDepth.
var errTooDeep = fmt.Errorf("%w: nested deeper than %d levels", ErrInvalid, MaxDepth)

// TypeError reports a field the gateway reads whose value has the wrong JSON type.
type TypeError struct {
	Field string // "params.name", ...
	Want  string // "a string", "an object"
}

func (e *TypeError) Error() string { return fmt.Sprintf("%s must be %s", e.Field, e.Want) }

// Object is one JSON object read strictly: its keys in order, each with its raw value.
// Its keys are unique even without regard to case.
type Object struct {
	name    string   // for errors: "params", "params._meta"
	members []member // in order
}

type member struct {
	key    string          // decoded
	rawKey []byte          // as written, quotes included: EditObject copies it unchanged
	value  json.RawMessage // raw
	// members are the value's own, read with it when it is an object the reader descends
	// into (walked): params' _meta and the objects in it are not read a second time.
	members []member
	walked  bool
}

// ReadObject reads raw, which must be a JSON object, strictly; name says where it is, for
// errors. A value that is not an object is a *TypeError; a repeated key a *KeyError.
func ReadObject(raw json.RawMessage, name string) (Object, error) {
	members, walked, _, err := readText(bytes.TrimLeft(raw, jsonSpace), 0, descendNone)
	if err != nil {
		return Object{}, fmt.Errorf("%w: %s is not valid JSON", ErrParse, name)
	}
	if !walked {
		return Object{}, &TypeError{Field: name, Want: "an object"}
	}
	return newObject(name, members)
}

// newObject is the object of members read from name, once its keys are checked: a key given
// twice, exactly or in another case (simple folding, as strings.EqualFold), is a *KeyError.
func newObject(name string, members []member) (Object, error) {
	var folded map[string]string // fold(key) -> key as written, once there are pairwiseKeys
	for i, m := range members {
		if i == pairwiseKeys {
			folded = make(map[string]string, 2*pairwiseKeys)
			for _, e := range members[:i] {
				folded[fold(e.key)] = e.key // unique: each was checked on its way in
			}
		}
		other, dup := "", false
		if folded == nil {
			for _, e := range members[:i] {
				if strings.EqualFold(e.key, m.key) {
					other, dup = e.key, true
					break
				}
			}
		} else {
			f := fold(m.key)
			if other, dup = folded[f]; !dup {
				folded[f] = m.key
			}
		}
		if dup {
			return Object{}, &KeyError{Object: name, Key: m.key, Other: other}
		}
	}
	return Object{name: name, members: members}, nil
}

// pairwiseKeys is how many keys an object may have before its duplicate check folds them
// into a map instead of comparing pairs, so a hostile object of many keys costs linear work.
const pairwiseKeys = 16

// Exact refuses a key that differs only in case from one of known: a reader that folds case
// would take it for the known key, a reader that does not would ignore it.
func (o Object) Exact(known ...string) error {
	for _, m := range o.members {
		k := m.key
		for _, want := range known {
			if k != want && strings.EqualFold(k, want) {
				return &KeyError{Object: o.name, Key: k, Other: want}
			}
		}
	}
	return nil
}

// Raw is the raw value of key, matched exactly.
func (o Object) Raw(key string) (json.RawMessage, bool) {
	m := o.member(key)
	return m.value, m.value != nil
}

func (o Object) member(key string) member {
	for _, m := range o.members {
		if m.key == key {
			return m
		}
	}
	return member{}
}

// Has reports whether key is present, matched exactly.
func (o Object) Has(key string) bool { return o.member(key).value != nil }

// String is the value of key, which must be a JSON string when present. A null counts as
// absent.
func (o Object) String(key string) (string, bool, error) {
	raw, ok := o.Raw(key)
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	if raw[0] != '"' {
		return "", false, &TypeError{Field: o.name + "." + key, Want: "a string"}
	}
	s, err := decodeString(raw)
	if err != nil {
		// encoding/json, and the go-sdk, read every lone surrogate as U+FFFD; a worker in
		// JavaScript or Python keeps it. A string gemgate decides on (a tool name, a URI)
		// would be one name to gemgate and another to such a worker.
		return "", false, &TypeError{Field: o.name + "." + key, Want: "a string without a lone UTF-16 surrogate escape"}
	}
	return s, true, nil
}

// Object is the value of key read strictly, which must be a JSON object when present. A null
// counts as absent.
func (o Object) Object(key string) (Object, bool, error) {
	m := o.member(key)
	if m.value == nil || string(m.value) == "null" {
		return Object{}, false, nil
	}
	if m.walked {
		child, err := newObject(o.name+"."+key, m.members)
		return child, err == nil, err
	}
	child, err := ReadObject(m.value, o.name+"."+key)
	return child, err == nil, err
}

// fold maps a key to one spelling for all the keys strings.EqualFold holds equal: each rune
// becomes the smallest rune of its simple folding orbit.
func fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToUpper(s) // the smallest of an ASCII letter's orbit is its capital
	}
	var b strings.Builder
	for _, r := range s {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		b.WriteRune(min)
	}
	return b.String()
}

func clip(s string) string { return textclip.String(s, 64) }

// decodeString is the JSON string raw decoded as encoding/json decodes it (ill-formed UTF-8,
// which only a worker's text may hold, as U+FFFD); a lone surrogate escape is an error.
func decodeString(raw []byte) (string, error) {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		if s, ok := wellKnownStrings[string(inner)]; ok {
			return s, nil
		}
		return string(inner), nil
	}
	s, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		if _, err := jsontext.AppendUnquote(nil, bytes.ToValidUTF8(raw, []byte("\uFFFD"))); err != nil {
			return "", err
		}
	}
	return string(s), nil
}
