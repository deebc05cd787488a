package gateway

import (
	"io"
	"math"
)

// A declared length lets a body land in one buffer of its size (io.ReadAll allocates some
// 2 MiB for a 1 MiB body). But the length is the client's word: the buffer grows with what
// arrives, never more than bodyGrowth times ahead of it.
const (
	bodyFirstChunk = 32 << 10 // the room a read starts with, at most
	bodyGrowth     = 8        // how far ahead of what has arrived the buffer may grow
)

// readDeclared is io.ReadAll for a body that declared its length (negative: none), up to limit.
func readDeclared(r io.Reader, declared, limit int64) ([]byte, error) {
	if declared < 0 {
		return io.ReadAll(r)
	}
	// The byte more must not overflow: a limit and declared length of math.MaxInt64.
	want := int(min(declared, limit, math.MaxInt-1)) + 1
	b := make([]byte, 0, min(want, bodyFirstChunk))
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			// net/http cuts a body at its length; should more come, the limit bounds it.
			next := min(want, cap(b)*bodyGrowth)
			if next <= cap(b) {
				next = cap(b) * 2
			}
			b = append(make([]byte, 0, next), b...)
		}
	}
}
