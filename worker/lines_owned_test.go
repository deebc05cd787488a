//go:build linux

package worker

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestOwnedLinesAreNeverReused: a line the reader hands over as owned is the caller's for
// good: whatever the reader reads after it (long lines that take the same pooled parts, short
// lines in the first buffer, lines in the same read), the owned line's bytes never change. A
// message parsed from it aliases those bytes for as long as it lives, so a reader that read
// into them again would change an answer on its way to a client.
func TestOwnedLinesAreNeverReused(t *testing.T) {
	// Each line's bytes are its own letter, so a line overwritten by another shows it.
	var in strings.Builder
	var want []string
	for i, n := range []int{10, 5000, 200000, partBufSize, partBufSize - 1, 1 << 20, 3, 70000, 4096, 4097, 300000, 1} {
		line := strings.Repeat(string(rune('a'+i)), n)
		want = append(want, line)
		in.WriteString(line)
		if i%3 == 0 {
			in.WriteString("\r") // a CR before the newline, possibly at a part's end
		}
		in.WriteString("\n")
	}
	for _, chunk := range []int{1000, lineBufSize, partBufSize, 1 << 20} {
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
				if len(line) > partBufSize && !owned {
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

// TestLongLineAllocatesItsLengthOnce: a 1 MiB answer costs one allocation of about its size,
// not the four megabytes a buffer grown by doubling allocated (and copied) on the way. The
// answers come one at a time, the reader going idle in between, as a worker's do.
func TestLongLineAllocatesItsLengthOnce(t *testing.T) {
	const size, lines = 1 << 20, 8
	lr, send := newLineOnRequest(t, []byte(strings.Repeat("x", size)+"\n"))
	read := func() {
		t.Helper()
		send <- struct{}{}
		if l, _, ok := lr.take(); !ok || len(l) != size {
			t.Fatalf("line: %d bytes, %v (%v)", len(l), ok, lr.err)
		}
	}
	perLine := allocatedPerCall(lines, read)
	if perLine > 1.5*size {
		t.Errorf("%.0f bytes allocated per %d-byte line, want at most 1.5 times the line", perLine, size)
	}
}

// newLineOnRequest is a lineReader on a pipe that line is written to once per value sent on
// send: a line once the last is read, so the reader goes idle in between, as a worker's
// stdout reader does between answers.
func newLineOnRequest(tb testing.TB, line []byte) (lr *lineReader, send chan<- struct{}) {
	tb.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close(); w.Close() })
	lr = newLineReader(r, DefaultMaxLineBytes)
	ch := make(chan struct{})
	tb.Cleanup(func() { close(ch) })
	go func() {
		for range ch {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	}()
	return lr, ch
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
	lr := newLineReader(r, max)
	return lr
}

// TestLongLinesAgreeWithScanner: the fuzzer's inputs are short, so lines that span the
// first buffer and several parts are checked here against bufio.Scanner: lines ending at,
// before and after a buffer's end, a carriage return as the last byte of a part, and limits
// that fall inside the second and third parts.
func TestLongLinesAgreeWithScanner(t *testing.T) {
	edges := []int{lineBufSize - 1, lineBufSize, lineBufSize + 1, lineBufSize + partBufSize - 1,
		lineBufSize + partBufSize, lineBufSize + partBufSize + 1, lineBufSize + 2*partBufSize + 7}
	var in strings.Builder
	for i, n := range edges {
		in.WriteString(strings.Repeat(string(rune('a'+i)), n-1))
		in.WriteString("\r\n") // the CR is the line's n-th byte: on a part's edge for some
		in.WriteString("short\n")
	}
	in.WriteString(strings.Repeat("z", lineBufSize+partBufSize+3)) // a last line without newline
	for _, max := range []int{lineBufSize, lineBufSize + partBufSize - 1, lineBufSize + partBufSize, 1 << 20} {
		for _, chunk := range []int{999, lineBufSize, 1 << 20} {
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

// BenchmarkLongLine is one 1 MiB line written to a pipe and read back, the reader going idle
// between lines as a worker's stdout reader does between answers.
func BenchmarkLongLine(b *testing.B) {
	line := []byte(strings.Repeat("x", 1<<20) + "\n")
	lr, send := newLineOnRequest(b, line)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		send <- struct{}{}
		if l, _, ok := lr.take(); !ok || len(l) != len(line)-1 {
			b.Fatalf("read %d bytes, %v", len(l), ok)
		}
	}
}

// TestIdleReaderKeepsNoPartList: after a long line, the idle reader holds neither buffers nor
// the list its parts were kept in, which grows with the longest line read.
func TestIdleReaderKeepsNoPartList(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	lr := newLineReader(r, DefaultMaxLineBytes)
	idle := make(chan int, 100) // the part list's capacity each time the reader waits empty
	lr.onWait = func(held int) {
		if held == 0 {
			idle <- cap(lr.parts) // on the reader's goroutine: no race
		}
	}
	go w.Write([]byte(strings.Repeat("x", 4<<20) + "\n"))
	if l, _, ok := lr.take(); !ok || len(l) != 4<<20 {
		t.Fatalf("read %d bytes, %v (%v)", len(l), ok, lr.err)
	}
	for len(idle) > 0 {
		<-idle // waits before the line came
	}
	go lr.take() // waits for a line that never comes
	for {
		select {
		case n := <-idle:
			if n != 0 {
				t.Fatalf("the idle reader keeps a part list of capacity %d", n)
			}
			return
		case <-time.After(10 * time.Second):
			t.Fatal("the reader never waited")
		}
	}
}

// allocatedPerCall is the bytes allocated per call of f over n calls, after one call that
// warms the pools.
func allocatedPerCall(n int, f func()) float64 {
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
}
