package worker

import (
	"os"

	"golang.org/x/sys/unix"
)

// awaitExit parks the calling goroutine until process pid has exited, without reaping it, so
// that exec.Cmd.Wait then returns at once. Wait alone blocks an OS thread per worker in waitid
// (docs/PERFORMANCE.md); here the pidfd waits in the runtime's poller. Without pidfd_open it
// returns at once, and Wait blocks its thread.
func awaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// The callback runs once at first and again each time the poller reports the pidfd
	// readable, which it becomes when the process exits. It asks, without blocking or reaping
	// (WNOWAIT: exec.Cmd.Wait reaps), whether the process has exited: with WNOHANG, waitid
	// fills the siginfo only once it has; an error means nothing to wait for, which Wait reports.
	_ = rc.Read(func(fd uintptr) bool {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		return err != nil || info.Signo != 0
	})
}
