//go:build linux

package worker

import (
	"bufio"
	"io"
)

// lineReader cuts a worker's output into lines as bufio.Scanner with bufio.ScanLines and a
// buffer of max+1 bytes does: the newline and a carriage return before it are dropped, a last
// line without a newline is kept, and a line of more than max bytes (its newline not counted)
// ends the reading with bufio.ErrTooLong. A line longer than the reader's buffer is joined
// from its parts into a slice of its own, which the reader hands over (take says it is owned).
type lineReader struct {
	r    *bufio.Reader
	max  int
	err  error // what ended the reading: bufio.ErrTooLong or a read error; nil at the input's end
	done bool
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReader(r), max: max}
}

// next returns the next line without its newline (nor a carriage return before it), valid
// until the next call; ok is false once the input has ended or l.err is set.
func (l *lineReader) next() (line []byte, ok bool) {
	line, _, ok = l.take()
	return line, ok
}

// take is next, also saying whether the line is owned: a slice the reader made for this line
// alone and keeps no reference to, which the caller may keep and alias for as long as it
// likes. A line that is not owned lies in the reader's buffer and is overwritten later.
func (l *lineReader) take() (line []byte, owned, ok bool) {
	var long []byte // the parts so far of a line longer than the buffer
	for !l.done {
		part, err := l.r.ReadSlice('\n')
		n := len(long) + len(part) // the line's bytes so far, its newline included
		switch {
		case err != nil && err != bufio.ErrBufferFull && err != io.EOF:
			l.stop(err)
		case err == nil && n-1 > l.max, err != nil && n > l.max:
			l.stop(bufio.ErrTooLong)
		case err == bufio.ErrBufferFull:
			long = append(long, part...)
		case err == nil || err == io.EOF && n > 0:
			if err == nil {
				part = part[:len(part)-1]
			}
			if long != nil {
				return dropCR(append(long, part...)), true, true
			}
			return dropCR(part), false, true
		default: // the end of the input
			l.stop(nil)
		}
	}
	return nil, false, false
}

func (l *lineReader) stop(err error) { l.err, l.done = err, true }

func dropCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}
