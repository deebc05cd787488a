//go:build linux

package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"
)

// stdinFile is the gateway's end of a worker's stdin: the pipe's *os.File, or a test's
// wrapper around it.
type stdinFile interface {
	Write(b []byte) (int, error)
	SetWriteDeadline(t time.Time) error
	Close() error
}

// Writes to a worker's stdin are combined: many sessions may share one worker, and a line
// each in a write of its own costs a system call (and a wake-up of the worker) per call. One
// caller at a time holds the turn and writes; a line that comes meanwhile is queued with its
// caller waiting, and the next turn writes every line queued by then in one write, up to
// batchBytes. There is no goroutine of its own: the turn passes from caller to caller.
//
// Each queued caller waits for its line's outcome, as a write of its own would, so an error
// still reaches the call that it concerns, and gemgate holds no line its caller has let go
// of: a stuck worker makes its callers wait (each until its context ends, the turn's write
// until WriteTimeout), never gemgate buffer. A line is never cut short nor interleaved: the
// turn writes whole lines, and only the turn writes.
const (
	// batchBytes bounds a combined write: a pipe's default capacity, so that a worker that
	// reads holds the whole batch at once, and WriteTimeout bounds a write of about one line,
	// as it did when each line had its own. A longer line is written alone, from its own bytes.
	batchBytes = 64 << 10
	// batchLines bounds the lines of one write.
	batchLines = 64
)

// batchBufs holds the buffers a turn copies its lines into: shared by every worker and only
// held during a write, so an idle worker holds none.
var batchBufs = sync.Pool{New: func() any { return new([batchBytes]byte) }}

// A queued line's state, under Process.wmu.
const (
	lineQueued  = iota // waiting; its caller may still take it back
	lineTaken          // in a turn's write; the outcome follows on out
	lineHasTurn        // its caller holds the turn and writes it (errYourTurn is on out)
)

// queuedLine is a line waiting for its turn, with its caller.
type queuedLine struct {
	line  []byte
	state int
	out   chan error // capacity 1: the write's outcome, or errYourTurn
}

var queuedLines = sync.Pool{New: func() any { return &queuedLine{out: make(chan error, 1)} }}

// errYourTurn tells a queued caller that it holds the turn now.
var errYourTurn = errors.New("worker: your turn to write")

// write writes one line. It waits for its turn at most until ctx ends, and the write itself
// at most WriteTimeout: a worker that leaves its stdin full that long is hung, and is stopped
// so that neither this caller nor anyone queued behind it waits on it for good. A line is
// never cut short by ctx: half a line would corrupt every message after it; a line whose
// caller gives up before its turn is never written.
func (p *Process) write(ctx context.Context, line []byte) error {
	if p.spec.OnTrace != nil {
		p.spec.OnTrace("to_worker", line)
	}
	buf := append(line, '\n') // Encode leaves room for the newline: no copy
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("waiting to write to the worker: %w", context.Cause(ctx))
	}
	p.wmu.Lock()
	if !p.writing {
		// Nobody writes: the turn is this caller's, and its line goes alone.
		p.writing = true
		p.wmu.Unlock()
		_, err := p.writeOut(buf)
		p.passTurn()
		return err
	}
	q := queuedLines.Get().(*queuedLine)
	q.line, q.state = buf, lineQueued
	p.queue = append(p.queue, q)
	p.wmu.Unlock()
	var err error
	select {
	case err = <-q.out:
		if err == errYourTurn {
			err = p.writeTurn(q)
		}
	case <-ctx.Done():
		err = p.withdrawLine(q, fmt.Errorf("waiting to write to the worker: %w", context.Cause(ctx)))
	case <-p.done:
		err = p.withdrawLine(q, ErrExited)
	}
	q.line = nil
	queuedLines.Put(q)
	return err
}

// withdrawLine takes back a queued line whose caller gave up (why): unless a turn is already
// writing it, it is never written.
func (p *Process) withdrawLine(q *queuedLine, why error) error {
	p.wmu.Lock()
	if q.state == lineTaken {
		p.wmu.Unlock()
		return <-q.out // being written: its outcome comes within WriteTimeout
	}
	i := slices.Index(p.queue, q)
	p.queue = slices.Delete(p.queue, i, i+1)
	if q.state == lineHasTurn {
		<-q.out // errYourTurn, given as the caller gave up: the turn passes on
		p.passTurnLocked()
	}
	p.wmu.Unlock()
	if errors.Is(why, ErrExited) {
		return p.writeErr(why)
	}
	return why
}

// passTurn ends a turn: the first queued caller, if any, holds the next one.
func (p *Process) passTurn() {
	p.wmu.Lock()
	p.passTurnLocked()
	p.wmu.Unlock()
}

func (p *Process) passTurnLocked() {
	if len(p.queue) == 0 {
		p.writing = false
		if cap(p.queue) > batchLines {
			p.queue = nil // a burst's queue is not kept by an idle worker
		}
		return
	}
	next := p.queue[0]
	next.state = lineHasTurn
	next.out <- errYourTurn
}

// writeTurn writes, for the caller holding the turn (me, first in the queue), its line and
// those queued after it in one write, hands each caller its line's outcome, and passes the
// turn on.
func (p *Process) writeTurn(me *queuedLine) error {
	var room [batchLines]*queuedLine
	batch := append(room[:0], me)
	p.wmu.Lock()
	size, i := len(me.line), 1 // me is p.queue[0]: lines leave the queue in order
	for ; i < len(p.queue) && i < batchLines && size+len(p.queue[i].line) <= batchBytes; i++ {
		q := p.queue[i]
		q.state = lineTaken
		size += len(q.line)
		batch = append(batch, q)
	}
	p.queue = slices.Delete(p.queue, 0, i)
	p.wmu.Unlock()

	var n int
	var err error
	if len(batch) == 1 {
		n, err = p.writeOut(me.line)
	} else {
		buf := batchBufs.Get().(*[batchBytes]byte)
		w := 0
		for _, q := range batch {
			w += copy(buf[w:], q.line)
		}
		n, err = p.writeOut(buf[:w])
		batchBufs.Put(buf)
	}
	p.passTurn()
	// A line written whole before the write failed was sent; the rest fail with the write.
	end := len(me.line)
	mine := outcome(end, n, err)
	for _, q := range batch[1:] {
		end += len(q.line)
		q.out <- outcome(end, n, err)
	}
	return mine
}

func outcome(end, written int, err error) error {
	if end <= written {
		return nil
	}
	return err
}

// writeOut writes buf to the worker's stdin within WriteTimeout, reporting the bytes written.
func (p *Process) writeOut(buf []byte) (int, error) {
	if err := p.stdin.SetWriteDeadline(time.Now().Add(p.spec.WriteTimeout)); err != nil && !errors.Is(err, os.ErrNoDeadline) {
		return 0, p.writeErr(ErrExited)
	}
	n, err := p.stdin.Write(buf)
	if err == nil {
		return n, nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		p.hang()
		return n, ErrHung
	}
	if errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) {
		// The worker is gone, and its last words (a refusal at greeting time) may still be
		// in the pipe: wait, briefly, for its output to be read, so the error can say why.
		select {
		case <-p.done:
		case <-time.After(2 * time.Second):
		}
		return n, p.writeErr(ErrExited)
	}
	return n, fmt.Errorf("writing to worker: %w", err)
}
