package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	textclip "github.com/gemgate/gemgate/internal/clip"
	"github.com/gemgate/gemgate/internal/jsontext"
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

// DepthError reports a message nested deeper than the limit.
type DepthError struct{ Limit int }

func (e *DepthError) Error() string {
	return fmt.Sprintf("%s: nested deeper than %d levels", ErrInvalid, e.Limit)
}

func (e *DepthError) Unwrap() error { return ErrInvalid }

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
}

// ReadObject reads raw, which must be a JSON object, strictly; name says where it is, for
// errors. A value that is not an object is a *TypeError; a repeated key a *KeyError.
func ReadObject(raw json.RawMessage, name string) (Object, error) {
	raw = bytes.TrimLeft(raw, jsonSpace)
	if v, _ := validate(raw, false); v != validJSON {
		return Object{}, fmt.Errorf("%w: %s is not valid JSON", ErrParse, name)
	}
	return readValidObject(raw, name)
}

// readValidObject is ReadObject for bytes already known to be valid JSON.
func readValidObject(raw json.RawMessage, name string) (Object, error) {
	w := scanner{b: raw}
	w.space()
	if w.i >= len(w.b) || w.b[w.i] != '{' {
		return Object{}, &TypeError{Field: name, Want: "an object"}
	}
	o := Object{name: name}
	var seen map[string]string // folded key -> key as written; made only for a large object
	w.i++
	for {
		w.space()
		if w.b[w.i] == '}' {
			return o, nil
		}
		if w.b[w.i] == ',' {
			w.i++
			w.space()
		}
		keyStart := w.i
		key, err := w.str()
		if err != nil {
			return Object{}, err
		}
		rawKey := raw[keyStart:w.i:w.i]
		if other, dup := o.foldedDuplicate(key, &seen); dup {
			return Object{}, &KeyError{Object: name, Key: key, Other: other}
		}
		w.space()
		w.i++ // ':'
		w.space()
		start := w.i
		w.skip()
		if o.members == nil {
			// Most objects of MCP messages have at most 4 members: one allocation, not
			// the three that growing from 1 to 4 would take.
			o.members = make([]member, 0, 4)
		}
		o.members = append(o.members, member{key: key, rawKey: rawKey, value: raw[start:w.i:w.i]})
	}
}

// pairwiseKeys is how many keys an object may have before its duplicate check folds them
// into a map: up to it, each new key is compared with the earlier ones by strings.EqualFold,
// which allocates nothing (at most pairwiseKeys²/2 comparisons of short keys); past it, each
// key is folded once and looked up, so a hostile object of many keys costs linear work.
const pairwiseKeys = 16

// foldedDuplicate reports the earlier key of o that key equals without regard to case (simple
// folding, as strings.EqualFold: it holds exactly when fold gives both one spelling), if any.
// *seen is the map of folded keys once o has more than pairwiseKeys; nil before.
func (o *Object) foldedDuplicate(key string, seen *map[string]string) (string, bool) {
	if len(o.members) < pairwiseKeys {
		for _, m := range o.members {
			if strings.EqualFold(m.key, key) {
				return m.key, true
			}
		}
		return "", false
	}
	if *seen == nil {
		*seen = make(map[string]string, 2*pairwiseKeys)
		for _, m := range o.members {
			(*seen)[fold(m.key)] = m.key // unique: each was checked on its way in
		}
	}
	f := fold(key)
	if other, dup := (*seen)[f]; dup {
		return other, true
	}
	(*seen)[f] = key
	return "", false
}

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
	for _, m := range o.members {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

// Has reports whether key is present, matched exactly.
func (o Object) Has(key string) bool {
	_, ok := o.Raw(key)
	return ok
}

// Len is the number of keys.
func (o Object) Len() int { return len(o.members) }

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
	// Decoded as the keys are (scanner.str): a string without escapes, in valid UTF-8, is its
	// bytes, which is what encoding/json would make of it, at one allocation instead of its
	// decoder's several; any other string goes through encoding/json.
	w := scanner{b: raw}
	s, err := w.str()
	if err != nil {
		return "", false, &TypeError{Field: o.name + "." + key, Want: "a string"}
	}
	if jsontext.HasLoneSurrogate(raw) {
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
	raw, ok := o.Raw(key)
	if !ok || string(raw) == "null" {
		return Object{}, false, nil
	}
	child, err := readValidObject(raw, o.name+"."+key)
	if err != nil {
		return Object{}, false, err
	}
	return child, true, nil
}

// CheckDepth reports a *DepthError when b nests objects and arrays deeper than limit. b need
// not be valid JSON; brackets inside strings do not count.
func CheckDepth(b []byte, limit int) error {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > limit {
				return &DepthError{Limit: limit}
			}
		case '}', ']':
			depth--
		}
	}
	return nil
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

// scanner walks JSON that json.Valid has accepted, so it checks shapes, not syntax. It never
// recurses: depth costs it nothing.
type scanner struct {
	b []byte
	i int
}

func (w *scanner) space() { w.i = SkipSpace(w.b, w.i) }

// SkipSpace returns the index of the first byte at or after i that is not JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// str reads the string at w.i and returns it decoded.
func (w *scanner) str() (string, error) {
	start := w.i
	w.i = skipString(w.b, w.i)
	raw := w.b[start+1 : w.i-1]
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		if s, ok := wellKnown(raw); ok {
			return s, nil
		}
		return string(raw), nil
	}
	var s string
	if err := json.Unmarshal(w.b[start:w.i], &s); err != nil {
		return "", fmt.Errorf("%w: %v", ErrParse, err)
	}
	return s, nil
}

// wellKnown is raw as one of the keys and values that every MCP message repeats, without
// allocating a string for it; ok is false for any other raw.
func wellKnown(raw []byte) (s string, ok bool) {
	s, ok = wellKnownStrings[string(raw)] // the lookup converts nothing
	return s, ok
}

// wellKnownStrings maps each string wellKnown knows to itself.
var wellKnownStrings = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{
		"jsonrpc", "2.0", "id", "method", "params", "result", "error", "code", "message", "data",
		"_meta", "name", "arguments", "content", "type", "text", "isError", "structuredContent",
		"resultType", "complete", "input_required", "progressToken", "tools/call", "version",
		"io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
		"io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/logLevel",
	} {
		m[s] = s
	}
	return m
}()

// skip consumes one value.
func (w *scanner) skip() { w.i = SkipValue(w.b, w.i) }

// SkipValue returns the index just past the JSON value that starts at b[i]. b must be JSON
// that json.Valid accepted (it checks shapes, not syntax) and i the start of a value, not
// white space. It never recurses, so nesting costs it nothing.
func SkipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
	default: // a number, true, false or null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
	depth := 0
	for {
		switch b[i] {
		case '"':
			i = skipString(b, i)
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
		i++
	}
}

// skipString returns the index just past the string whose opening quote is b[i].
func skipString(b []byte, i int) int {
	i++ // opening quote
	for {
		j := bytes.IndexByte(b[i:], '"')
		i += j + 1
		// The quote ends the string unless an odd run of backslashes escapes it.
		k := i - 2
		for k >= 0 && b[k] == '\\' {
			k--
		}
		if (i-2-k)%2 == 0 {
			return i
		}
	}
}
