package worker

import (
	"bufio"
	"os"
	"testing"
)

// BenchmarkPipeLines is one 100-byte line written to a pipe and read back, the reader going
// idle between lines as a worker's stdout reader does between answers: lineReader (no buffer
// held while idle) against the bufio.Scanner it replaced.
func BenchmarkPipeLines(b *testing.B) {
	line := append(echoAnswer("7", 100), '\n')
	for _, reader := range []string{"lineReader", "Scanner"} {
		b.Run(reader, func(b *testing.B) {
			r, w, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { r.Close(); w.Close() })
			var next func() []byte
			if reader == "Scanner" {
				sc := bufio.NewScanner(r)
				sc.Buffer(make([]byte, 0, 4<<10), DefaultMaxLineBytes+1)
				next = func() []byte { sc.Scan(); return sc.Bytes() }
			} else {
				lr := newLineReader(r, DefaultMaxLineBytes)
				next = func() []byte { l, _, _ := lr.take(); return l }
			}
			got := make(chan int)
			go func() {
				for {
					l := next()
					got <- len(l)
					if len(l) == 0 {
						return
					}
				}
			}()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.Write(line); err != nil {
					b.Fatal(err)
				}
				if n := <-got; n != len(line)-1 {
					b.Fatalf("read %d bytes", n)
				}
			}
			w.Close()
			<-got
		})
	}
}
