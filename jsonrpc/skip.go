package jsonrpc

import "bytes"

// Skipping over JSON already validated, without the tokenizer: for gateway's lastMember, which
// finds one member of a worker's result without keeping the others.

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
