package demo

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// chatterWriter is the GEMGATE_DEMO_CHATTER test aid: before every line
// written through it, it writes a line "chatter: <n>" that is not JSON, as
// noisy stdio servers do, to prove the gateway skips such lines.
type chatterWriter struct {
	w io.Writer

	mu      sync.Mutex
	n       int
	midLine bool // the last write did not end a line
}

func (c *chatterWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	written := 0
	for len(p) > 0 {
		if !c.midLine {
			c.n++
			if _, err := fmt.Fprintf(c.w, "chatter: %d\n", c.n); err != nil {
				return written, err
			}
		}
		line := p
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			line = p[:i+1]
		}
		n, err := c.w.Write(line)
		written += n
		if err != nil {
			return written, err
		}
		c.midLine = line[len(line)-1] != '\n'
		p = p[len(line):]
	}
	return written, nil
}
