package jsonrpc

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// The validating pass. Every message the gateway reads is checked in one pass over its bytes:
// JSON syntax exactly as encoding/json's Valid decides it (its nesting limit included), how
// deeply it nests, and, for a client's message, well-formed UTF-8. The checks it replaces were
// three passes (utf8.Valid, CheckDepth, json.Valid), and json.Valid alone, an indirect call per
// byte, was half the gateway's CPU for a 1 MiB call. This pass crosses the plain bytes of a
// string, nearly all of a large message, eight at a time. It must decide exactly as those
// checks did: FuzzValidateAgrees and FuzzParseAgrees compare it with them.

// jsonMaxDepth is encoding/json's nesting limit: its Valid refuses a value nested deeper.
const jsonMaxDepth = 10000

// verdict is what validate found.
type verdict uint8

const (
	validJSON verdict = iota
	// invalidJSON: a syntax error, or nesting deeper than jsonMaxDepth. The pass stopped
	// there, so whether the rest is well-formed UTF-8 is not known.
	invalidJSON
	// invalidUTF8: ill-formed UTF-8 inside a string (only when asked to check it), found
	// before any syntax error.
	invalidUTF8
)

// validate checks that b is one JSON value, white space around it allowed, as json.Valid(b)
// does, and, when checkUTF8, that its strings are well-formed UTF-8: for valid JSON that is
// utf8.Valid(b), since every byte outside a string is ASCII. A \u escape is not UTF-8 and is
// not checked (a lone surrogate escape is valid JSON). deepest is how deeply b nests objects
// and arrays, as far as the pass went: for valid JSON, CheckDepth(b, limit) fails exactly
// when deepest > limit.
//
// It never recurses: which container each level is sits in a bit set on the stack.
func validate(b []byte, checkUTF8 bool) (v verdict, deepest int) {
	var isObject [jsonMaxDepth/64 + 1]uint64 // bit d: level d is an object, not an array
	depth := 0
	i := SkipSpace(b, 0)
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return invalidJSON, deepest
		}
		switch c := b[i]; c {
		case '{', '[':
			depth++
			if depth > jsonMaxDepth {
				return invalidJSON, deepest
			}
			deepest = max(deepest, depth)
			if c == '{' {
				isObject[depth/64] |= 1 << (depth % 64)
			} else {
				isObject[depth/64] &^= 1 << (depth % 64)
			}
			i = SkipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' is '{'+2 and ']' is '['+2: empty
				depth--
				i++
				break
			}
			if c == '{' {
				if i, v = scanKey(b, i, checkUTF8); v != validJSON {
					return v, deepest
				}
			}
			continue // the first member's value, or the first element
		case '"':
			if i, v = scanString(b, i, checkUTF8); v != validJSON {
				return v, deepest
			}
		case 't':
			if i = scanLiteral(b, i, "true"); i < 0 {
				return invalidJSON, deepest
			}
		case 'f':
			if i = scanLiteral(b, i, "false"); i < 0 {
				return invalidJSON, deepest
			}
		case 'n':
			if i = scanLiteral(b, i, "null"); i < 0 {
				return invalidJSON, deepest
			}
		default:
			if i = scanNumber(b, i); i < 0 {
				return invalidJSON, deepest
			}
		}
		// A value ended at b[i]: what may follow it depends on where it sits.
		for {
			i = SkipSpace(b, i)
			if depth == 0 {
				if i == len(b) {
					return validJSON, deepest
				}
				return invalidJSON, deepest
			}
			if i >= len(b) {
				return invalidJSON, deepest
			}
			inObject := isObject[depth/64]&(1<<(depth%64)) != 0
			c := b[i]
			if c == '}' && inObject || c == ']' && !inObject {
				depth--
				i++
				continue // the container was a value too
			}
			if c != ',' {
				return invalidJSON, deepest
			}
			i = SkipSpace(b, i+1)
			if inObject {
				if i, v = scanKey(b, i, checkUTF8); v != validJSON {
					return v, deepest
				}
			}
			break
		}
	}
}

// scanKey reads an object's key at b[i], its colon and the white space after it: it returns
// the index where the member's value starts.
func scanKey(b []byte, i int, checkUTF8 bool) (int, verdict) {
	if i >= len(b) || b[i] != '"' {
		return i, invalidJSON
	}
	i, v := scanString(b, i, checkUTF8)
	if v != validJSON {
		return i, v
	}
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, invalidJSON
	}
	return SkipSpace(b, i+1), validJSON
}

// Eight bytes in one word, for scanString: ones has a 1 in each byte, highs each byte's top bit.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// scanString reads the string whose opening quote is b[i] and returns the index just past
// its closing quote. Its bytes may be anything but a control character (below 0x20), and a
// backslash must start one of JSON's escapes, as encoding/json decides; with checkUTF8 they
// must also be well-formed UTF-8.
func scanString(b []byte, i int, checkUTF8 bool) (int, verdict) {
	i++
	var top uint64 // bytes with the top bit set need a look only when UTF-8 is checked
	if checkUTF8 {
		top = highs
	}
	for {
		// Plain bytes, eight at a time: a word is crossed whole unless one of its bytes is a
		// quote, a backslash, a control character or (when checked) not ASCII. The lowest
		// byte the masks flag is the first such byte: a borrow only flags bytes above it.
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			q := x ^ (ones * '"')
			s := x ^ (ones * '\\')
			m := (x-ones*0x20)&^x | (q-ones)&^q | (s-ones)&^s
			m = m&highs | x&top
			if m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(b) {
			return i, invalidJSON
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, validJSON
		case c == '\\':
			if i+1 >= len(b) {
				return i, invalidJSON
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, invalidJSON
				}
				i += 6
			default:
				return i, invalidJSON
			}
		case c < 0x20:
			return i, invalidJSON
		case c >= utf8.RuneSelf && checkUTF8:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return i, invalidUTF8
			}
			i += size
		default:
			i++
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scanLiteral reads lit (true, false or null) at b[i]; -1 when it is not there.
func scanLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// scanNumber reads a number at b[i] as JSON writes one: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?;
// -1 when there is none. Any length is syntax: how large a number is is not its concern.
func scanNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
