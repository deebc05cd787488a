package worker

import (
	"os"

	"golang.org/x/sys/unix"
)

// awaitExit parks the calling goroutine until process pid has exited, without reaping it, so
// that exec.Cmd.Wait then returns at once. exec.Cmd.Wait alone blocks an OS thread in waitid
// for the whole life of the worker: a thread per worker (docs/PERFORMANCE.md measures it).
// Here the process's pidfd waits in the runtime's poller instead. On a kernel without pidfd_open it
// returns at once and Wait blocks its thread as before.
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
	// readable, which it becomes when the process exits.
	_ = rc.Read(func(fd uintptr) bool { return exited(int(fd)) })
}

// exited asks, without blocking and without reaping, whether the pidfd's process has exited.
// With WNOHANG, waitid leaves the siginfo zeroed while the child runs and fills it (si_signo
// SIGCHLD) once it has exited; WNOWAIT leaves the child for exec.Cmd.Wait to reap.
func exited(pidfd int) bool {
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PIDFD, pidfd, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil {
		return true // nothing to wait for: let Wait report it
	}
	return info.Signo != 0
}
