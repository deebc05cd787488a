package worker

import (
	"os"
	"syscall"
	"unsafe"
)

// awaitExit parks the calling goroutine until process pid has exited, without reaping it, so
// that exec.Cmd.Wait then returns at once. exec.Cmd.Wait alone blocks an OS thread in waitid
// for the whole life of the worker: a thread per idle session, about 100 KiB each. Here the
// process's pidfd waits in the runtime's poller instead. On a kernel without pidfd_open it
// returns at once and Wait blocks its thread as before.
func awaitExit(pid int) {
	const sysPidfdOpen = 434
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		return
	}
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		syscall.Close(int(fd))
		return
	}
	f := os.NewFile(fd, "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// The callback runs once at first and again each time the poller reports the pidfd
	// readable, which it becomes when the process exits.
	_ = rc.Read(func(fd uintptr) bool { return exited(fd) })
}

// exited asks, without blocking and without reaping, whether the pidfd's process has exited.
func exited(pidfd uintptr) bool {
	const (
		pPidfd  = 3          // P_PIDFD
		wNoWait = 0x01000000 // WNOWAIT: leave the child for exec.Cmd.Wait to reap
	)
	var info [128]byte // siginfo_t; si_pid stays 0 while the child runs
	_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPidfd, pidfd, uintptr(unsafe.Pointer(&info[0])),
		syscall.WEXITED|syscall.WNOHANG|wNoWait, 0, 0)
	if errno != 0 {
		return true // nothing to wait for: let Wait report it
	}
	return *(*int32)(unsafe.Pointer(&info[16])) != 0 // si_pid
}
