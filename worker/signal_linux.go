package worker

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

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
