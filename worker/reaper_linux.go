package worker

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// A worker's descendant can leave the worker's session (setsid) and outlive its process group.
// gemgate therefore is a child subreaper: such a process, once its parent is gone, becomes
// gemgate's child, and every time a worker ends gemgate kills and reaps every child it did not
// start itself (in the sandbox, the PID namespace does this). Whose orphan it was cannot be
// told, so it dies at the next end of any worker: a worker's helper must stay its own child.

var (
	subreaper atomic.Bool

	// startMu keeps a sweep from mistaking a worker being started for an orphan: the child
	// exists (and has its own session) a moment before its pid is tracked.
	startMu sync.RWMutex
	live    sync.Map // pid → *exec.Cmd: workers started and not yet reaped
)

// BecomeSubreaper makes the calling process a child subreaper (PR_SET_CHILD_SUBREAPER) and
// turns on the sweep of adopted orphans after each worker's end.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	subreaper.Store(true)
	return nil
}

func startTracked(cmd *exec.Cmd) error {
	startMu.RLock()
	defer startMu.RUnlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	live.Store(cmd.Process.Pid, cmd)
	return nil
}

// untrack forgets a reaped worker, unless its pid already belongs to a newer one.
func untrack(cmd *exec.Cmd) { live.CompareAndDelete(cmd.Process.Pid, cmd) }

// ReapOrphans kills and reaps every child of gemgate that is not a live worker and not in
// gemgate's own session (where tools it runs, such as gslist, stay): processes adopted as a
// subreaper. It returns how many it reaped, and does nothing before BecomeSubreaper.
func ReapOrphans() int {
	if !subreaper.Load() {
		return 0
	}
	startMu.Lock()
	defer startMu.Unlock()
	self := os.Getpid()
	sid, err := unix.Getsid(0)
	if err != nil {
		return 0
	}
	n := 0
	// Killing an orphan orphans its own children, who are adopted in turn: sweep again until
	// nothing is left, with a bound in case a fork bomb keeps refilling.
	for round := 0; round < 100; round++ {
		orphans := adopted(self, sid)
		if len(orphans) == 0 {
			break
		}
		// Safe from reuse: a child's pid stays taken until this sweep reaps it.
		for _, pid := range orphans {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range orphans {
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(pid, &ws, 0, nil); err == nil {
				n++
			}
		}
	}
	return n
}

// adopted lists the children of self outside session sid that are not live workers.
func adopted(self, sid int) []int {
	candidates, ok := childrenOf(self)
	if !ok {
		candidates = allProcesses()
	}
	var out []int
	for _, pid := range candidates {
		if _, ok := live.Load(pid); ok {
			continue
		}
		ppid, _, psid, ok := statIDs(pid)
		if ok && ppid == self && psid != sid {
			out = append(out, pid)
		}
	}
	return out
}

// childrenOf lists pid's children from /proc/<pid>/task/*/children, sparing a scan of every
// process; ok is false where the kernel lacks those files (CONFIG_PROC_CHILDREN).
func childrenOf(pid int) (children []int, ok bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			if os.IsNotExist(err) && len(children) == 0 {
				return nil, false
			}
			continue // the thread has just exited
		}
		for _, f := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(f)); err == nil {
				children = append(children, c)
			}
		}
	}
	return children, true
}

// allProcesses lists every pid in /proc.
func allProcesses() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// signalSandboxed sends sig to the members of process group pgid except bubblewrap's own
// processes (whose executable is bwrap). bwrap neither forwards signals nor survives SIGINT or
// SIGTERM: signalled with its group it would die at once and, with --die-with-parent, take the
// worker down with SIGKILL, so a worker asked to stop or to drop a stuck call would get no
// chance to. Signalled alone, the worker acts on it, and bwrap exits when the worker does.
func signalSandboxed(pgid int, sig syscall.Signal, bwrap string) {
	pids := allProcesses()
	if pids == nil {
		_ = syscall.Kill(-pgid, sig) // no /proc to look into: the whole group, as unsandboxed
		return
	}
	bwrapReal, _ := filepath.EvalSymlinks(bwrap)
	for _, pid := range pids {
		if _, pgrp, _, ok := statIDs(pid); !ok || pgrp != pgid {
			continue
		}
		if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil && (exe == bwrap || exe == bwrapReal) {
			continue
		}
		_ = syscall.Kill(pid, sig)
	}
}

// statIDs reads a process's parent pid, process group and session id from /proc/<pid>/stat,
// whose fields after the command name are state ppid pgrp session ... The name may hold
// anything, so it is cut at the last ')'.
func statIDs(pid int) (ppid, pgrp, sid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := bytes.LastIndexByte(b, ')')
	if err != nil || i < 0 {
		return 0, 0, 0, false
	}
	var state string
	_, err = fmt.Sscan(string(b[i+1:]), &state, &ppid, &pgrp, &sid)
	return ppid, pgrp, sid, err == nil
}
