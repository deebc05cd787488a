//go:build linux

package worker

import (
	"bufio"
	"bytes"
	"os"
	"sync"
	"syscall"
)

// lineReader cuts a worker's pipe into lines as bufio.Scanner with bufio.ScanLines does, but
// holds no buffer while the pipe is empty between lines: a Scanner keeps its buffer for the
// reader's whole life, 4 KiB per idle session, and the megabytes one long answer made it grow
// to. Here the reader takes a buffer from a pool to read, and gives it back before it waits in
// the runtime's poller with every byte read handed out: no syscall more than a Scanner's.
type lineReader struct {
	rc  syscall.RawConn
	max int // longest line, its newline not counted

	buf  []byte // nil while idle; unread bytes are buf[r:w]
	r, w int
	eof  bool
	err  error // the error that ended the reading: bufio.ErrTooLong or a read error

	onWait func(held int) // a test seam: told the bytes held each time the reader waits

	readFn func(fd uintptr) bool // l.readOnce, bound once: no closure allocated per read
	n      int                   // what readOnce read
	rerr   error
}

// lineBufSize is the buffer a burst of reading starts with; longer lines grow it, and a grown
// buffer is dropped, not pooled, once idle.
const lineBufSize = 4 << 10

var lineBufs = sync.Pool{New: func() any { return new([lineBufSize]byte) }}

func newLineReader(f *os.File, max int) (*lineReader, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	l := &lineReader{rc: rc, max: max}
	l.readFn = l.readOnce
	return l, nil
}

// next returns the next line without its newline (nor a carriage return before it), valid
// until the next call; ok is false once the input has ended or l.err is set.
func (l *lineReader) next() (line []byte, ok bool) {
	for {
		if l.r < l.w && l.err == nil {
			// The limit as bufio.Scanner applies it with a buffer of max+1 bytes: a line
			// whose bytes, newline included, do not fit is too long, and so are max+1 bytes
			// without a newline. The buffer here may hold more than that.
			i := bytes.IndexByte(l.buf[l.r:l.w], '\n')
			if i > l.max || (i < 0 && l.w-l.r > l.max) {
				l.err = bufio.ErrTooLong
				continue
			}
			if i >= 0 {
				line = l.buf[l.r : l.r+i]
				l.r += i + 1
				return dropCR(line), true
			}
			if l.eof { // a last line without its newline
				line = l.buf[l.r:l.w]
				l.r = l.w
				return dropCR(line), true
			}
		}
		if l.eof || l.err != nil {
			l.release()
			return nil, false
		}
		l.fill()
	}
}

// fill reads once more into the buffer, making room first. With nothing unread, the buffer
// goes back before the reader waits.
func (l *lineReader) fill() {
	if l.r == l.w {
		l.r, l.w = 0, 0 // kept for a read that does not wait; a wait gives it back
	} else if l.w == len(l.buf) {
		switch {
		case l.r > 0: // move the partial line to the front
			l.w = copy(l.buf, l.buf[l.r:l.w])
			l.r = 0
		case len(l.buf) >= l.max+1:
			l.err = bufio.ErrTooLong
			return
		default:
			grown := make([]byte, min(2*len(l.buf), l.max+1))
			l.w = copy(grown, l.buf[l.r:l.w])
			l.r = 0
			l.putBack()
			l.buf = grown
		}
	}
	err := l.rc.Read(l.readFn)
	n, rerr := l.n, l.rerr
	switch {
	case err != nil:
		l.err = err
	case rerr != nil:
		l.err = os.NewSyscallError("read", rerr)
	case n == 0:
		l.eof = true
	default:
		l.w += n
	}
}

func (l *lineReader) waiting() {
	if l.onWait != nil {
		l.onWait(cap(l.buf))
	}
}

// readOnce is RawConn.Read's callback: one read into the buffer, taking one from the pool if
// none is held. On EAGAIN, with nothing unread, the buffer goes back before the poller's wait.
func (l *lineReader) readOnce(fd uintptr) bool {
	if l.buf == nil {
		l.buf = lineBufs.Get().(*[lineBufSize]byte)[:]
	}
	for {
		l.n, l.rerr = syscall.Read(int(fd), l.buf[l.w:])
		if l.rerr != syscall.EINTR {
			break
		}
	}
	if l.rerr == syscall.EAGAIN {
		if l.r == l.w {
			l.release() // nothing to read yet: wait in the poller holding nothing
		}
		l.waiting()
		return false
	}
	return true
}

// release gives the buffer back; nothing unread may be in it.
func (l *lineReader) release() {
	l.putBack()
	l.buf, l.r, l.w = nil, 0, 0
}

func (l *lineReader) putBack() {
	if len(l.buf) == lineBufSize {
		lineBufs.Put((*[lineBufSize]byte)(l.buf))
	}
}

func dropCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}
