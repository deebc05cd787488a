package worker

import (
	"errors"
	"strings"
	"testing"
)

// FuzzLineReaderAgreesWithScanner: on any bytes, written in any chunk size, with any line
// limit, the worker's line reader cuts the same lines as bufio.Scanner with ScanLines and the
// same limit, and fails where it fails: what a worker writes is read one way only.
func FuzzLineReaderAgreesWithScanner(f *testing.F) {
	f.Add([]byte("a\r\nb\n\nc"), uint16(1), uint16(100))
	f.Add([]byte(strings.Repeat("x", 300)+"\n"), uint16(7), uint16(100))
	f.Add([]byte("abcdefghijklmnopqrst\nabcdefghijklmnopqrstu\n"), uint16(4096), uint16(20))
	f.Add([]byte("abcdefghijklmnopqrst\r\n"), uint16(2), uint16(20))
	f.Add([]byte("abcdefghijklmnopqrstu"), uint16(3), uint16(20))
	f.Fuzz(func(t *testing.T, in []byte, chunk, max uint16) {
		// The reference: bufio.Scanner with a buffer of max+1 bytes, as the reader applies its
		// limit. A Scanner's first buffer (16 bytes in scanLines) may hold more than a smaller
		// limit allows, so limits below it are not compared.
		if chunk == 0 || max < 16 {
			return
		}
		want, wantErr := scanLines(string(in), int(max))
		got, gotErr := readLinesChunked(t, string(in), int(chunk), int(max))
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("chunk %d, max %d: lines %q, want %q", chunk, max, clipAll(got), clipAll(want))
		}
		if !errors.Is(gotErr, wantErr) && gotErr != wantErr {
			t.Fatalf("chunk %d, max %d: error %v, want %v", chunk, max, gotErr, wantErr)
		}
	})
}
