package wire

import (
	"errors"
	"net/http"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

// slowConn is a response writer whose client takes perChunk to read each write, and which
// fails a write that ends past the deadline set, as a connection's would.
type slowConn struct {
	perChunk time.Duration
	deadline time.Time
	written  int
	h        http.Header
}

func (c *slowConn) Header() http.Header { return c.h }
func (c *slowConn) WriteHeader(int)     {}
func (c *slowConn) Flush()              {}
func (c *slowConn) SetWriteDeadline(t time.Time) error {
	c.deadline = t
	return nil
}
func (c *slowConn) Write(b []byte) (int, error) {
	time.Sleep(c.perChunk)
	if !c.deadline.IsZero() && time.Now().After(c.deadline) {
		return 0, os.ErrDeadlineExceeded
	}
	c.written += len(b)
	return len(b), nil
}

// WriteFlushed bounds a long write by its chunks (each within WriteTimeout) and on the
// whole (MinWriteRate past the first WriteTimeout): a client reading at 128 KiB/s gets a
// 1 MiB answer; one reading at 21 KiB/s, each chunk in time, is cut when the whole runs
// late, not after the last chunk; and a stop channel ends a long write between chunks.
func TestWriteFlushedBounds(t *testing.T) {
	body := make([]byte, 1<<20)
	synctest.Test(t, func(t *testing.T) {
		c := &slowConn{perChunk: 500 * time.Millisecond, h: http.Header{}}
		if err := WriteFlushed(http.NewResponseController(c), c, body, nil, WriteTimeout); err != nil || c.written != len(body) {
			t.Fatalf("128 KiB/s: %v after %d of %d bytes", err, c.written, len(body))
		}
	})
	synctest.Test(t, func(t *testing.T) {
		c := &slowConn{perChunk: 3 * time.Second, h: http.Header{}}
		start := time.Now()
		err := WriteFlushed(http.NewResponseController(c), c, body, nil, WriteTimeout)
		limit := WriteTimeout + time.Duration(len(body))*time.Second/MinWriteRate
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("21 KiB/s: %v after %d of %d bytes, want the deadline", err, c.written, len(body))
		}
		if took := time.Since(start); took > limit+c.perChunk {
			t.Fatalf("21 KiB/s: cut after %v, the whole write's bound is %v", took, limit)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		c := &slowConn{perChunk: 500 * time.Millisecond, h: http.Header{}}
		stop := make(chan struct{})
		time.AfterFunc(2*time.Second, func() { close(stop) })
		err := WriteFlushed(http.NewResponseController(c), c, body, stop, WriteTimeout)
		if !errors.Is(err, ErrWriteStopped) || c.written >= len(body) {
			t.Fatalf("stopped mid-write: %v after %d of %d bytes", err, c.written, len(body))
		}
	})
}
