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
// holds no buffer while the pipe is empty between lines (a Scanner keeps 4 KiB per idle
// session, or the megabytes one long answer grew it to): it reads into a pooled buffer, and
// gives it back before it waits in the runtime's poller with every byte read handed out.
//
// A line longer than the buffer is not grown by doubling: the full buffers are set aside, and
// the line assembled once into a slice of its length that the reader never touches again
// (take reports it owned), so the caller may keep it without a copy.
type lineReader struct {
	rc  syscall.RawConn
	max int // longest line, its newline not counted

	buf  []byte // nil while idle; unread bytes are buf[r:w]; always a pooled buffer
	r, w int
	eof  bool
	cut  bool  // the last line take returned ended the input without its newline
	err  error // the error that ended the reading: bufio.ErrTooLong, a read error, or SyscallConn's

	// parts are the full buffers of a line that did not fit in one; it goes on in buf[r:w],
	// r being 0. partLen is their length together.
	parts   [][]byte
	partLen int

	onWait func(held int) // a test seam: told the bytes held each time the reader waits

	readFn func(fd uintptr) bool // l.readOnce, bound once: no closure allocated per read
	n      int                   // what readOnce read
	rerr   error
}

// lineBufSize is the pooled buffer a burst of reading starts with; partBufSize, a pipe's
// default capacity, the pooled buffer each further part of a long line is read into.
const (
	lineBufSize = 4 << 10
	partBufSize = 64 << 10
)

var (
	lineBufs = sync.Pool{New: func() any { return new([lineBufSize]byte) }}
	partBufs = sync.Pool{New: func() any { return new([partBufSize]byte) }}
)

// newLineReader reads f; a file without raw access (never a pipe) fails the first take.
func newLineReader(f *os.File, max int) *lineReader {
	rc, err := f.SyscallConn()
	l := &lineReader{rc: rc, max: max, err: err}
	l.readFn = l.readOnce
	return l
}

// take returns the next line without its newline (nor a carriage return before it); ok is
// false once the input has ended or l.err is set. A line owned is made for this line alone,
// with no reference kept, so the caller may keep it; one not owned is valid until the next
// call.
func (l *lineReader) take() (line []byte, owned, ok bool) {
	for {
		if (l.r < l.w || l.eof && l.partLen > 0) && l.err == nil {
			// The limit as bufio.Scanner applies it with a buffer of max+1 bytes: a line
			// whose bytes, newline included, do not fit is too long, and so are max+1 bytes
			// without a newline. The buffer here may hold more than that.
			i := bytes.IndexByte(l.buf[l.r:l.w], '\n')
			if i >= 0 && l.partLen+i > l.max || i < 0 && l.partLen+l.w-l.r > l.max {
				l.err = bufio.ErrTooLong
				continue
			}
			if i >= 0 || l.eof { // a line, or a last line without its newline
				end := l.w
				if i >= 0 {
					end = l.r + i
				}
				if l.partLen > 0 {
					line = l.assemble(end)
					owned = true
				} else {
					line = l.buf[l.r:end]
				}
				l.r = min(end+1, l.w)
				l.cut = i < 0
				return bytes.TrimSuffix(line, []byte{'\r'}), owned, true
			}
		}
		if l.eof || l.err != nil {
			l.release()
			l.dropParts()
			return nil, false, false
		}
		l.fill()
	}
}

// assemble copies the parts and buf[:end] into a slice of the line's length (bytes.Join does
// not zero it first, as make would), and gives the parts back: the line is the caller's.
func (l *lineReader) assemble(end int) []byte {
	l.parts = append(l.parts, l.buf[:end])
	line := bytes.Join(l.parts, nil)
	l.parts[len(l.parts)-1] = nil
	l.parts = l.parts[:len(l.parts)-1] // buf is not a part: it stays the reader's
	l.dropParts()
	return line
}

// dropParts gives the parts of a line back to their pools.
func (l *lineReader) dropParts() {
	for i, p := range l.parts {
		putBuf(p)
		l.parts[i] = nil
	}
	l.parts, l.partLen = l.parts[:0], 0
}

// fill reads once more into the buffer, making room first.
func (l *lineReader) fill() {
	if l.r == l.w {
		l.r, l.w = 0, 0 // kept for a read that does not wait; a wait gives it back
	} else if l.w == len(l.buf) {
		switch {
		case l.r > 0: // move the partial line to the front
			l.w = copy(l.buf, l.buf[l.r:l.w])
			l.r = 0
		case l.partLen+len(l.buf) >= l.max+1:
			l.err = bufio.ErrTooLong
			return
		default:
			// The buffer holds only the start of a line: set it aside, go on in a fresh one.
			if l.parts == nil {
				l.parts = make([][]byte, 0, 32) // two megabytes in parts; grown for longer lines
			}
			l.parts = append(l.parts, l.buf)
			l.partLen += len(l.buf)
			l.buf = partBufs.Get().(*[partBufSize]byte)[:]
			l.r, l.w = 0, 0
		}
	}
	switch err := l.rc.Read(l.readFn); {
	case err != nil:
		l.err = err
	case l.rerr != nil:
		l.err = os.NewSyscallError("read", l.rerr)
	case l.n == 0:
		l.eof = true
	default:
		l.w += l.n
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
		if l.onWait != nil {
			l.onWait(cap(l.buf) + l.partLen)
		}
		return false
	}
	return true
}

// release gives the buffer back; nothing unread may be in it. Without a line coming in, the
// list of parts goes too (a 16 MiB line's took 6 KiB).
func (l *lineReader) release() {
	putBuf(l.buf)
	l.buf, l.r, l.w = nil, 0, 0
	if l.partLen == 0 {
		l.parts = nil
	}
}

// putBuf gives a buffer back to the pool of its size.
func putBuf(b []byte) {
	switch len(b) {
	case lineBufSize:
		lineBufs.Put((*[lineBufSize]byte)(b))
	case partBufSize:
		partBufs.Put((*[partBufSize]byte)(b))
	}
}
