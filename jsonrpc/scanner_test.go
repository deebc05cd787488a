package jsonrpc

import (
	"errors"
	"testing"
)

// The scanner's callers hand it whole JSON values today, but its bounds checks are what
// keep a future caller's short or odd input an error instead of a panic; these tests hold
// them at the very end of the buffer.

func TestScannerStopsAtTheEnd(t *testing.T) {
	w := scanner{b: []byte(" \t\r\n")}
	w.space()
	if w.i != 4 {
		t.Errorf("space over whitespace to the end: i = %d, want 4", w.i)
	}
	for _, scalar := range []string{"123", "-1.5e3", "true", "null"} {
		w := scanner{b: []byte(scalar)}
		w.skip()
		if w.i != len(scalar) {
			t.Errorf("skip %s at the end of the buffer: i = %d, want %d", scalar, w.i, len(scalar))
		}
	}
}

func TestReadValidObjectEmpty(t *testing.T) {
	for _, raw := range []string{"", "   "} {
		_, err := readValidObject([]byte(raw), "params")
		var te *TypeError
		if !errors.As(err, &te) || te.Field != "params" {
			t.Errorf("readValidObject(%q) = %v, want a TypeError for params", raw, err)
		}
	}
}
