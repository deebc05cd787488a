//go:build unix

package demo

import (
	"os"

	"golang.org/x/sys/unix"
)

// pollable returns a file that does f's I/O through the Go runtime's
// poller instead of blocking system calls, and a function that undoes it.
// It changes nothing unless f is a pipe or a socket in blocking mode, which
// is what a worker's stdin and stdout are: a child inherits its ends of the
// gateway's pipes in blocking mode, so every read of stdin that waits for the
// next request sits in a read(2) while holding its P.
//
// Why that matters: with go1.26, a stop-the-world (the GC's mark
// termination) can miss a P whose goroutine is just entering a system call
// (reentersyscall checks sched.gcwaiting before it switches to _Gsyscall;
// stopTheWorldWithSema retakes syscall Ps once, then only preempts). If that
// call is the stdin read, the world stays half-stopped until sysmon retakes
// the P, and sysmon, seeing gcwaiting, sleeps up to forcegcperiod/2 = 60 s
// when no timer is due: the request that was just read is answered exactly
// 60 s late. A goroutine waiting in the poller holds no P, so no stop of the
// world ever waits on it.
//
// The file pollable returns is a duplicate of f's descriptor, so closing it
// leaves f open. O_NONBLOCK belongs to the open file, shared with f and any
// other holder of it; undo puts the blocking mode back, for a shell that
// reads the same pipe after the worker.
func pollable(f *os.File) (*os.File, func()) {
	nop := func() {}
	raw, err := f.SyscallConn()
	if err != nil {
		return f, nop
	}
	var fd int
	keep := true // f is not a blocking pipe or socket, or cannot be duplicated
	_ = raw.Control(func(u uintptr) {
		var st unix.Stat_t
		if unix.Fstat(int(u), &st) != nil {
			return
		}
		if t := st.Mode & unix.S_IFMT; t != unix.S_IFIFO && t != unix.S_IFSOCK {
			return // a terminal or a file: the poller cannot wait on it
		}
		fl, err := unix.FcntlInt(u, unix.F_GETFL, 0)
		if err != nil || fl&unix.O_NONBLOCK != 0 {
			return // already non-blocking, so os already polls it
		}
		fd, err = unix.FcntlInt(u, unix.F_DUPFD_CLOEXEC, 0)
		keep = err != nil
	})
	if keep {
		return f, nop
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return f, nop
	}
	// os.NewFile registers a non-blocking descriptor with the poller.
	p := os.NewFile(uintptr(fd), f.Name())
	return p, func() {
		p.Close() // wakes a read still waiting with an error
		_ = raw.Control(func(u uintptr) { _ = unix.SetNonblock(int(u), false) })
	}
}
