//go:build linux

package worker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestLineReaderReadsAsScanLines: lines come out as bufio.ScanLines cuts them (newline and a
// carriage return before it dropped, a last line without newline kept), however the writes
// split them, and a line over the limit is ErrTooLong, as with bufio.Scanner.
func TestLineReaderReadsAsScanLines(t *testing.T) {
	long := strings.Repeat("x", 10000)
	for _, tc := range []struct {
		name, in string
		max      int
	}{
		{"empty", "", 100},
		{"one", "a\n", 100},
		{"crlf", "a\r\nb\r\n\r\n", 100},
		{"last without newline", "a\nb", 100},
		{"blank lines", "\n\n\nx\n", 100},
		{"grows past the first buffer", long + "\n" + long[:5000] + "\nend", 20000},
		{"at the limit", long + "\n", 10000},
		{"over the limit", "ok\n" + long + "\n", 9999},
	} {
		for _, chunk := range []int{1, 7, 4096, 1 << 20} {
			t.Run(tc.name, func(t *testing.T) {
				want, wantErr := scanLines(tc.in, tc.max)
				got, gotErr := readLinesChunked(t, tc.in, chunk, tc.max)
				if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
					t.Errorf("chunk %d: lines %q, want %q", chunk, clipAll(got), clipAll(want))
				}
				if !errors.Is(gotErr, wantErr) && gotErr != wantErr {
					t.Errorf("chunk %d: error %v, want %v", chunk, gotErr, wantErr)
				}
			})
		}
	}
}

func scanLines(in string, max int) ([]string, error) {
	sc := bufio.NewScanner(strings.NewReader(in))
	sc.Buffer(make([]byte, 0, 16), max+1)
	var out []string
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out, sc.Err()
}

func readLinesChunked(t *testing.T, in string, chunk, max int) ([]string, error) {
	lr := newChunkedLineReader(t, in, chunk, max)
	var out []string
	for {
		line, ok := lr.next()
		if !ok {
			return out, lr.err
		}
		out = append(out, string(bytes.Clone(line)))
	}
}

func clipAll(ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = snippet([]byte(l))
	}
	return out
}

// readerBuf is the line reader's buffer: bufio.Reader's default size.
const readerBuf = 4096

// TestOwnedLinesAreNeverReused: a line the reader hands over as owned is the caller's for
// good: whatever the reader reads after it (long lines, short lines in the buffer, lines in
// the same read), the owned line's bytes never change. A
// message parsed from it aliases those bytes for as long as it lives, so a reader that read
// into them again would change an answer on its way to a client.
func TestOwnedLinesAreNeverReused(t *testing.T) {
	// Each line's bytes are its own letter, so a line overwritten by another shows it.
	var in strings.Builder
	var want []string
	for i, n := range []int{10, 5000, 200000, 64 << 10, 64<<10 - 1, 1 << 20, 3, 70000, 4096, 4097, 300000, 1} {
		line := strings.Repeat(string(rune('a'+i)), n)
		want = append(want, line)
		in.WriteString(line)
		if i%3 == 0 {
			in.WriteString("\r") // a CR before the newline, possibly at a part's end
		}
		in.WriteString("\n")
	}
	for _, chunk := range []int{1000, readerBuf, 64 << 10, 1 << 20} {
		t.Run(fmt.Sprintf("chunk %d", chunk), func(t *testing.T) {
			lr := newChunkedLineReader(t, in.String(), chunk, DefaultMaxLineBytes)
			var kept [][]byte
			var keptWant []string
			for i := 0; ; i++ {
				line, owned, ok := lr.take()
				if !ok {
					break
				}
				if i >= len(want) || string(line) != want[i] {
					t.Fatalf("line %d: %q, want %q", i, snippet(line), snippet([]byte(want[min(i, len(want)-1)])))
				}
				if len(line) > readerBuf && !owned {
					t.Errorf("line %d of %d bytes spans parts but is not handed over", i, len(line))
				}
				if owned {
					kept, keptWant = append(kept, line), append(keptWant, want[i])
				}
			}
			if lr.err != nil {
				t.Fatal(lr.err)
			}
			if len(kept) == 0 {
				t.Fatal("no line was handed over")
			}
			for i, line := range kept {
				if string(line) != keptWant[i] {
					t.Errorf("owned line %d (%d bytes) changed after it was handed over: %q", i, len(line), snippet(line))
				}
			}
		})
	}
}

// newChunkedLineReader is a lineReader on a pipe that in is written to, chunk bytes a write.
func newChunkedLineReader(t *testing.T, in string, chunk, max int) *lineReader {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	go func() {
		defer w.Close()
		b := []byte(in)
		for len(b) > 0 {
			n := min(chunk, len(b))
			if _, err := w.Write(b[:n]); err != nil {
				return
			}
			b = b[n:]
		}
	}()
	return newLineReader(r, max)
}

// TestLongLinesAgreeWithScanner: the fuzzer's inputs are short, so lines that span the
// first buffer and several parts are checked here against bufio.Scanner: lines ending at,
// before and after a buffer's end, a carriage return as the last byte of a part, and limits
// that fall inside the second and third parts.
func TestLongLinesAgreeWithScanner(t *testing.T) {
	edges := []int{readerBuf - 1, readerBuf, readerBuf + 1, 2*readerBuf - 1, 2 * readerBuf, 2*readerBuf + 1, 3*readerBuf + 7}
	var in strings.Builder
	for i, n := range edges {
		in.WriteString(strings.Repeat(string(rune('a'+i)), n-1))
		in.WriteString("\r\n") // the CR is the line's n-th byte: on a part's edge for some
		in.WriteString("short\n")
	}
	in.WriteString(strings.Repeat("z", 2*readerBuf+3)) // a last line without newline
	for _, max := range []int{readerBuf, 2*readerBuf - 1, 2 * readerBuf, 1 << 20} {
		for _, chunk := range []int{999, readerBuf, 1 << 20} {
			t.Run(fmt.Sprintf("max %d chunk %d", max, chunk), func(t *testing.T) {
				want, wantErr := scanLines(in.String(), max)
				got, gotErr := readLinesChunked(t, in.String(), chunk, max)
				if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
					t.Errorf("%d lines, want %d (or different bytes)", len(got), len(want))
				}
				if !errors.Is(gotErr, wantErr) && gotErr != wantErr {
					t.Errorf("error %v, want %v", gotErr, wantErr)
				}
			})
		}
	}
}
