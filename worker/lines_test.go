package worker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
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

// TestLineReaderHoldsNoBufferWhileIdle: between lines, with the pipe empty, the reader holds
// no buffer: not the first one, and not the megabyte one a long line made it grow.
func TestLineReaderHoldsNoBufferWhileIdle(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	lr := newLineReader(r, 4<<20)
	held := make(chan int, 1000)
	lr.onWait = func(n int) { held <- n }
	lines, ack := make(chan string), make(chan struct{})
	go func() {
		for {
			got, _, ok := lr.take()
			if !ok {
				close(lines)
				return
			}
			lines <- string(got)
			<-ack
		}
	}()
	waitsEmpty := func(after string) {
		t.Helper()
		select {
		case n := <-held:
			if n != 0 {
				t.Errorf("after %s, the reader waits holding %d bytes", after, n)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("after %s, the reader never waited", after)
		}
	}
	waitsEmpty("nothing")
	for _, line := range []string{"short", strings.Repeat("y", 1<<20), "later"} {
		go w.WriteString(line + "\n")
		select {
		case got := <-lines:
			if got != line {
				t.Fatalf("read %d bytes, want %d", len(got), len(line))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("a %d-byte line was never read", len(line))
		}
		for range len(held) {
			<-held // waits while the line was still coming in: a partial line is held then
		}
		ack <- struct{}{}
		waitsEmpty(fmt.Sprintf("a %d-byte line", len(line)))
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
		line, _, ok := lr.take()
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

// A file the reader cannot read raw gives no line, and the reader's error says why.
func TestLineReaderOfNoFileEndsWithItsError(t *testing.T) {
	lr := newLineReader(nil, 1024)
	if _, _, ok := lr.take(); ok || !errors.Is(lr.err, os.ErrInvalid) {
		t.Fatalf("take = %v, err %v; want no line and os.ErrInvalid", ok, lr.err)
	}
}
