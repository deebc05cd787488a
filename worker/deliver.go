//go:build linux

package worker

import (
	"context"

	"github.com/gemgate/gemgate/jsonrpc"
)

// SendFunc is SendContext, but the answer (or the error the worker's end gives the call) is
// handed to deliver instead of Result, on the goroutine that has it: the worker's stdout
// reader, or its waiter. The caller needs no goroutine of its own parked on Result per call,
// and the answer takes one hand-off less. deliver runs at most once, never after Withdraw
// reported the call pending; it must not block, nor wait for anything that waits for this
// worker's reading or exit (Stop, a write to the worker). Result is nil for such a call.
func (p *Process) SendFunc(ctx context.Context, req *jsonrpc.Message, deliver func(*jsonrpc.Message)) (*Call, error) {
	return p.send(ctx, req, deliver)
}

// give hands the call its answer: to deliver, or into Result's buffer of one.
func (c *Call) give(m *jsonrpc.Message) {
	if c.deliver != nil {
		c.deliver(m)
		return
	}
	c.result <- m
}
