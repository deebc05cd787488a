//go:build linux

package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// Write writes m to the worker as it is: a notification, or a response to the worker's own
// request (m.ID its id). Its line is written whole while it holds the turn (Process.turn), so
// that the lines of callers sharing a worker never interleave. It waits for its turn until ctx
// ends, and on the write WriteTimeout, after which the worker is hung and stopped: no one
// waits on it for good. ctx never cuts a line short (half a line would corrupt every later
// message); a line whose caller gives up before its turn is never written.
func (p *Process) Write(ctx context.Context, m *jsonrpc.Message) error {
	line := m.Encode()
	buf := append(line, '\n') // Encode leaves room for the newline: no copy
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("waiting to write to the worker: %w", context.Cause(ctx))
	}
	select {
	case p.turn <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting to write to the worker: %w", context.Cause(ctx))
	case <-p.done:
		return p.writeErr(ErrExited)
	}
	defer p.passTurn()
	if p.spec.OnTrace != nil {
		// Traced in its turn: a line given up before its turn was never sent, and lines are
		// traced in the order they are written.
		p.spec.OnTrace("to_worker", line)
	}
	return p.writeOut(buf)
}

// passTurn ends a turn: the next caller waiting, if any, takes it.
func (p *Process) passTurn() { <-p.turn }

// writeOut writes buf to the worker's stdin within WriteTimeout.
func (p *Process) writeOut(buf []byte) error {
	if err := p.stdin.SetWriteDeadline(time.Now().Add(p.spec.WriteTimeout)); err != nil && !errors.Is(err, os.ErrNoDeadline) {
		return p.writeErr(ErrExited)
	}
	_, err := p.stdin.Write(buf)
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		p.hang()
		return ErrHung
	}
	if errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) {
		// The worker is gone, and its last words (a refusal) may still be in the pipe: wait,
		// briefly, for its output to be read, so the error can say why. One that closed its
		// stdin and runs on can be sent nothing again: it is stopped.
		select {
		case <-p.done:
		case <-time.After(2 * time.Second):
			if errors.Is(err, syscall.EPIPE) && !p.hasExited() {
				p.log.Warn("worker closed its stdin but runs on; stopping it", "pid", p.Pid())
				go p.Stop()
			}
		}
		return p.writeErr(ErrExited)
	}
	return fmt.Errorf("writing to worker: %w", err)
}

// hasExited reports whether the worker's process has exited (and been reaped).
func (p *Process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}
