//go:build !unix

package demo

import "os"

// pollable leaves f as it is where the demo worker has no poller trick (see
// stdio_unix.go).
func pollable(f *os.File) (*os.File, func()) { return f, func() {} }
