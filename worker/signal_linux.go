package worker

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// signalSandboxed sends sig to the members of process group pgid except bubblewrap's own
// processes (whose executable is bwrap). bwrap neither forwards signals nor survives SIGINT or
// SIGTERM: signalled with its group it would die at once and, with --die-with-parent, take the
// worker down with SIGKILL, so a worker asked to stop or to drop a stuck call would get no
// chance to. Signalled alone, the worker acts on it, and bwrap exits when the worker does.
func signalSandboxed(pgid int, sig syscall.Signal, bwrap string) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		_ = syscall.Kill(-pgid, sig) // no /proc to look into: the whole group, as unsandboxed
		return
	}
	bwrapReal, _ := filepath.EvalSymlinks(bwrap)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || processGroup(pid) != pgid {
			continue
		}
		if exe, err := os.Readlink("/proc/" + e.Name() + "/exe"); err == nil && (exe == bwrap || exe == bwrapReal) {
			continue
		}
		_ = syscall.Kill(pid, sig)
	}
}

// processGroup is pid's process group as /proc/<pid>/stat gives it, or -1.
func processGroup(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses: cut at the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return -1
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return -1
	}
	return g
}
