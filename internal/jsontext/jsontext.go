// Package jsontext reads what encoding/json would quietly repair in a JSON text: escapes of
// lone UTF-16 surrogates, which it decodes, all alike, to U+FFFD. A reader that must see two
// different texts as two (a user name, a tool name) refuses them instead.
//
// It must never import another gemgate package: auth and jsonrpc both use it.
package jsontext

import "encoding/hex"

// HasLoneSurrogate reports whether a JSON text holds a \uD800-\uDFFF escape that is not
// half of a pair: a high surrogate followed at once by an escaped low one. Outside strings a
// backslash is no JSON, which the reading after this refuses.
func HasLoneSurrogate(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		r, ok := escapedUnit(b, i)
		if !ok {
			i++ // \" \\ \/ \b ...: the escaped byte is not a backslash that starts another
			continue
		}
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true // a low surrogate with no high one just before it
		case r >= 0xD800 && r <= 0xDBFF:
			lo, ok := escapedUnit(b, i+6)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11 // the pair, less the loop's step
		default:
			i += 5
		}
	}
	return false
}

// escapedUnit reads the \uXXXX escape at b[i:], if there is one.
func escapedUnit(b []byte, i int) (rune, bool) {
	var u [2]byte
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	if _, err := hex.Decode(u[:], b[i+2:i+6]); err != nil {
		return 0, false
	}
	return rune(u[0])<<8 | rune(u[1]), true
}
