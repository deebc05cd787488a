//go:build linux

package worker

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// newCountedLineReader is a lineReader on a fresh pipe whose read system calls are counted.
func newCountedLineReader(t testing.TB) (lr *lineReader, w *os.File, reads *int) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	lr = newLineReader(r, DefaultMaxLineBytes)
	reads = new(int)
	read := lr.readFn
	lr.readFn = func(fd uintptr) bool { *reads++; return read(fd) }
	return lr, w, reads
}

// Answers that a worker writes together reach the gateway in one read: the reader hands each
// of them out from its buffer, with no system call per line.
func TestLinesOfOneReadNeedNoMoreReads(t *testing.T) {
	lr, w, reads := newCountedLineReader(t)
	var burst []byte
	const n = 8
	for i := range n {
		burst = append(append(burst, echoAnswer(strconv.Itoa(i), 100)...), '\n')
	}
	if _, err := w.Write(burst); err != nil {
		t.Fatal(err)
	}
	w.Close() // a reader that reads again finds the end, rather than waiting for good
	for i := range n {
		line, _, ok := lr.take()
		if !ok || !bytes.Equal(line, echoAnswer(strconv.Itoa(i), 100)) {
			t.Fatalf("line %d = %q, %v", i, line, ok)
		}
	}
	if *reads != 1 {
		t.Errorf("%d reads for %d lines written together, want 1", *reads, n)
	}
}

// BenchmarkPipeLineBursts is BenchmarkPipeLines with the lines written eight at a time, as a
// worker answering queued calls does: the reader's cost per line, one op being one line.
func BenchmarkPipeLineBursts(b *testing.B) {
	const n = 8
	var burst []byte
	for range n {
		burst = append(append(burst, echoAnswer("7", 100)...), '\n')
	}
	lr, w, reads := newCountedLineReader(b)
	got := make(chan int)
	go func() {
		for {
			l, _, ok := lr.take()
			got <- len(l)
			if !ok {
				return
			}
		}
	}()
	b.SetBytes(int64(len(burst) / n))
	b.ReportAllocs()
	lines := 0
	for b.Loop() {
		if lines%n == 0 {
			if _, err := w.Write(burst); err != nil {
				b.Fatal(err)
			}
		}
		if l := <-got; l != len(burst)/n-1 {
			b.Fatalf("read %d bytes", l)
		}
		lines++
	}
	b.StopTimer()
	for ; lines%n != 0; lines++ {
		<-got // the rest of the last burst
	}
	w.Close()
	<-got // the reader's end: it reads no more
	b.ReportMetric(float64(*reads)/float64(lines), "reads/line")
}
