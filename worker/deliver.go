//go:build linux

package worker

import (
	"context"

	"github.com/gemgate/gemgate/jsonrpc"
)

// A Recipient takes the answer to a call sent with SendTo.
type Recipient interface {
	// Deliver runs at most once, never after Withdraw reported the call pending, on the
	// goroutine that has the answer: the worker's stdout reader, or its waiter. It must not
	// block, nor wait for anything that waits for this worker's reading or exit (Stop, a
	// write to the worker).
	Deliver(*jsonrpc.Message)
}

// SendTo is SendContext, but the answer (or the error the worker's end gives the call) is
// handed to the recipient instead of Result, on the goroutine that has it. The caller needs no
// goroutine of its own parked on Result per call, and the answer takes one hand-off less; a
// caller whose call record is the recipient allocates nothing more for it. Result is nil for
// such a call.
func (p *Process) SendTo(ctx context.Context, req *jsonrpc.Message, to Recipient) (*Call, error) {
	return p.send(ctx, req, to)
}

// SendFunc is SendTo with a function as the recipient.
func (p *Process) SendFunc(ctx context.Context, req *jsonrpc.Message, deliver func(*jsonrpc.Message)) (*Call, error) {
	if deliver == nil {
		return p.send(ctx, req, nil)
	}
	return p.send(ctx, req, deliverFunc(deliver))
}

// deliverFunc is a function as a Recipient; a func is pointer-shaped, so the conversion
// allocates nothing.
type deliverFunc func(*jsonrpc.Message)

func (f deliverFunc) Deliver(m *jsonrpc.Message) { f(m) }

// give hands the call its answer: to its recipient, or into Result's buffer of one.
func (c *Call) give(m *jsonrpc.Message) {
	if c.to != nil {
		c.to.Deliver(m)
		return
	}
	c.result <- m
}
