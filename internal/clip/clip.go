// Package clip shortens text that gemgate quotes in logs and error messages: a client's
// field, a worker's line, a token's claim. It is the one truncation rule of the module: at
// most max bytes are kept, never half a UTF-8 sequence, and what was cut is counted, as
// "...(+N more)".
//
// It must never import another gemgate package: any package may use it.
package clip

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// String returns s if it is at most max bytes long, and otherwise its first max bytes (fewer,
// to end on a whole UTF-8 sequence) followed by "...(+N more)", N the bytes cut.
func String(s string, max int) string { return clipped(s, max) }

// Quote is String(s, 100) as a JSON string: how a message quotes a field a client sent.
func Quote(s string) string {
	b, _ := json.Marshal(clipped(s, 100))
	return string(b)
}

// Bytes is String for a byte slice; only what is kept is copied.
func Bytes(b []byte, max int) string { return clipped(b, max) }

func clipped[T string | []byte](s T, max int) string {
	if len(s) <= max {
		return string(s)
	}
	n := max // the first byte dropped, moved back to the start of a UTF-8 sequence
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return string(s[:n]) + "...(+" + strconv.Itoa(len(s)-n) + " more)"
}
