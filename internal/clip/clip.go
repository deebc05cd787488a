// Package clip shortens text that gemgate quotes in logs and error messages: a client's
// field, a worker's line, a token's claim. It is the one truncation rule of the module: at
// most max bytes are kept, never half a UTF-8 sequence, and what was cut is counted, as
// "...(+N more)".
//
// It must never import another gemgate package: any package may use it.
package clip

import (
	"strconv"
	"unicode/utf8"
)

// String returns s if it is at most max bytes long, and otherwise its first max bytes (fewer,
// to end on a whole UTF-8 sequence) followed by "...(+N more)", N the bytes cut.
func String(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := cut(s[:max+1])
	return s[:n] + "...(+" + strconv.Itoa(len(s)-n) + " more)"
}

// Bytes is String for a byte slice; only what is kept is copied.
func Bytes(b []byte, max int) string {
	if len(b) <= max {
		return string(b)
	}
	n := cut(string(b[:max+1]))
	return string(b[:n]) + "...(+" + strconv.Itoa(len(b)-n) + " more)"
}

// cut is where to cut head, whose last byte is the first one dropped: before it, moved back
// to the start of a UTF-8 sequence.
func cut(head string) int {
	n := len(head) - 1
	for n > 0 && !utf8.RuneStart(head[n]) {
		n--
	}
	return n
}
