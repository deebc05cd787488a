package gateway

import (
	"io"
	"math"
)

// How a request body with a declared length is read. io.ReadAll does not know the length: it
// reads into chunks of growing size and copies them into one slice at the end, some two
// megabytes allocated and one copied for a 1 MiB body. A declared length lets the body land
// in one buffer of its size. But the length is the client's word, and a client that
// declares megabytes and sends a few bytes must not make the gateway hold megabytes: the
// buffer grows with what arrives, never more than bodyGrowth times ahead of it.
const (
	bodyFirstChunk = 32 << 10 // the room a read starts with, at most
	bodyGrowth     = 8        // how far ahead of what has arrived the buffer may grow
)

// readDeclared reads r to its end, as io.ReadAll does, for a body that declared its length:
// its last buffer is of that length and one byte more, the room to see the end without
// growing. limit is the most the body may hold (r is cut there); a negative declared length
// is none, and r is read as io.ReadAll reads it.
func readDeclared(r io.Reader, declared, limit int64) ([]byte, error) {
	if declared < 0 {
		return io.ReadAll(r)
	}
	// The one byte more must not overflow: a limit of math.MaxInt64 (no limit to speak of)
	// and a client declaring as much would make want negative, and make panic.
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
			// More than declared cannot come from net/http, which cuts a body at its length;
			// should it come, the buffer still grows, and the limit's reader bounds it.
			next := min(want, cap(b)*bodyGrowth)
			if next <= cap(b) {
				next = cap(b) * 2
			}
			b = append(make([]byte, 0, next), b...)
		}
	}
}
