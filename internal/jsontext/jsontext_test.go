package jsontext

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// loneSurrogateOracle: the plain definition over UTF-16 code units: a high surrogate not
// followed at once by a low one, or a low one not preceded at once by a high one.
func loneSurrogateOracle(units []uint16) bool {
	for i := 0; i < len(units); i++ {
		u := units[i]
		switch {
		case utf16.IsSurrogate(rune(u)) && u < 0xDC00:
			if i+1 >= len(units) || units[i+1] < 0xDC00 || units[i+1] > 0xDFFF {
				return true
			}
			i++
		case utf16.IsSurrogate(rune(u)):
			return true
		}
	}
	return false
}

// jsonOfUnits writes units as a JSON string, each unit escaped (\uXXXX, hex case by the
// flags) or, when it is not a surrogate and the flag says so, written as itself; a few
// other escapes (\\, \", \/) come along, so that an escaped backslash before a "u" is seen.
// It also returns the code units the text holds in the order written, with a 0 for
// anything between two escapes that keeps them from being a pair.
func jsonOfUnits(units []uint16, flags []byte) (string, []uint16) {
	var b strings.Builder
	var held []uint16
	b.WriteString(`{"sub":"`)
	for i, u := range units {
		f := byte(0)
		if i < len(flags) {
			f = flags[i]
		}
		switch {
		case f&3 == 1 && !utf16.IsSurrogate(rune(u)) && u >= 0x20 && u != '"' && u != '\\':
			b.WriteRune(rune(u))
			held = append(held, u)
		case f&3 == 2:
			b.WriteString(`\\u`) // an escaped backslash, then the letters: no escape at all
			fmt.Fprintf(&b, "%04x", u)
			held = append(held, 0)
		case f&4 != 0:
			fmt.Fprintf(&b, `\u%04X`, u)
			held = append(held, u)
		default:
			fmt.Fprintf(&b, `\u%04x`, u)
			held = append(held, u)
		}
		if f&8 != 0 {
			b.WriteString(`\/\"`)
			held = append(held, 0)
		}
	}
	b.WriteString(`"}`)
	return b.String(), held
}

// FuzzLoneSurrogateAgrees: hasLoneSurrogate finds a lone surrogate escape exactly when the
// code units the JSON text escapes hold one, and the text is JSON to encoding/json.
func FuzzLoneSurrogateAgrees(f *testing.F) {
	f.Add([]byte{0x00, 0xD8, 0x00, 0xDC}, []byte{0, 0})
	f.Add([]byte{0x00, 0xD8}, []byte{0})
	f.Add([]byte{0x00, 0xDC, 0x00, 0xD8}, []byte{4, 0})
	f.Add([]byte{0x00, 0xD8, 0x41, 0x00}, []byte{0, 1})
	f.Add([]byte{0x00, 0xD8}, []byte{2})
	f.Add([]byte{0x00, 0xD8, 0x00, 0xDC}, []byte{8, 0})
	f.Fuzz(func(t *testing.T, raw, flags []byte) {
		units := make([]uint16, len(raw)/2)
		for i := range units {
			units[i] = uint16(raw[2*i]) | uint16(raw[2*i+1])<<8
		}
		doc, held := jsonOfUnits(units, flags)
		if !json.Valid([]byte(doc)) || !utf8.ValidString(doc) {
			t.Fatalf("the test wrote no JSON: %q", doc)
		}
		if got, want := HasLoneSurrogate([]byte(doc)), loneSurrogateOracle(held); got != want {
			t.Fatalf("HasLoneSurrogate(%q) = %v, want %v", doc, got, want)
		}
	})
}
