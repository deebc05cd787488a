package worker

import (
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// exitWatch waits for the exits of all workers on one goroutine: each worker's pidfd sits in
// one epoll set, and that set in the runtime's poller. A goroutine per worker parked in
// awaitExit for the worker's whole life costs its stack, kilobytes per idle session; here a
// worker's end gets a goroutine only once it has come. Descriptors: one for all workers, and
// the pidfd per worker that awaitExit held too.
type exitWatch struct {
	once    sync.Once
	ep      int
	rc      syscall.RawConn
	ok      bool
	mu      sync.Mutex
	waiting map[int32]func() // by pidfd
	events  [64]unix.EpollEvent
}

var exits exitWatch

// onExit runs f on a goroutine of its own once process pid (a child of gemgate's, not yet
// reaped) has exited. It reports false, and f never runs, if the exit cannot be watched here
// (no pidfd or epoll): the caller then waits itself.
func onExit(pid int, f func()) bool {
	exits.once.Do(exits.start)
	if !exits.ok {
		return false
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return false
	}
	exits.mu.Lock()
	defer exits.mu.Unlock()
	exits.waiting[int32(fd)] = f
	// Level-triggered: a process that exited before this still shows.
	if err := unix.EpollCtl(exits.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
		delete(exits.waiting, int32(fd))
		unix.Close(fd)
		return false
	}
	return true
}

func (x *exitWatch) start() {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return
	}
	if err := unix.SetNonblock(ep, true); err != nil {
		unix.Close(ep)
		return
	}
	f := os.NewFile(uintptr(ep), "worker-exits")
	if x.rc, err = f.SyscallConn(); err != nil {
		f.Close()
		return
	}
	x.ep, x.waiting, x.ok = ep, map[int32]func(){}, true
	go func() {
		// The callback runs each time the poller reports the set readable, and never says
		// done: the watch lasts as long as gemgate. f stays referenced here, so the set is
		// never closed under the poller.
		_ = x.rc.Read(x.collect)
		f.Close()
	}()
}

// collect takes every exit the set holds, without blocking, and starts each one's function.
func (x *exitWatch) collect(uintptr) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for {
		n, err := unix.EpollWait(x.ep, x.events[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return false // wait for the next exit
		}
		taken := 0
		for _, ev := range x.events[:n] {
			fd := int(ev.Fd)
			if !exited(fd) {
				continue // not ended after all: stays in the set
			}
			taken++
			_ = unix.EpollCtl(x.ep, unix.EPOLL_CTL_DEL, fd, nil)
			unix.Close(fd)
			if f := x.waiting[ev.Fd]; f != nil {
				delete(x.waiting, ev.Fd)
				go f()
			}
		}
		if taken == 0 {
			return false // only false alarms: asking again at once would spin
		}
	}
}
