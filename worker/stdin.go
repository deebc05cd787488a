//go:build linux

package worker

import "time"

// stdinFile is the gateway's end of a worker's stdin: the pipe's *os.File, or a test's
// wrapper around it.
type stdinFile interface {
	Write(b []byte) (int, error)
	SetWriteDeadline(t time.Time) error
	Close() error
}
