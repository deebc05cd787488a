//go:build linux

package worker

import "github.com/gemgate/gemgate/jsonrpc"

// A Recipient takes the answer to a call sent to it (Send).
type Recipient interface {
	// Deliver runs at most once, never after Abandon reported the call pending, on the
	// goroutine that has the answer: the worker's stdout reader, or its waiter. It must not
	// block, nor wait for anything that waits for this worker's reading or exit (Stop, a
	// write to the worker).
	Deliver(*jsonrpc.Message)
}

// RecipientFunc is a function as a Recipient.
type RecipientFunc func(*jsonrpc.Message)

func (f RecipientFunc) Deliver(m *jsonrpc.Message) { f(m) }

// give hands the call its answer: to its recipient, or into Result's buffer of one.
func (c *Call) give(m *jsonrpc.Message) {
	if c.to != nil {
		c.to.Deliver(m)
		return
	}
	c.result <- m
}
