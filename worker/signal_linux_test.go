package worker

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestStatIDs(t *testing.T) {
	ppid, pgrp, sid, ok := statIDs(os.Getpid())
	if !ok || ppid != os.Getppid() || pgrp != syscall.Getpgrp() {
		t.Errorf("statIDs(self) = %d, %d, %d, %v, want ppid %d, pgrp %d", ppid, pgrp, sid, ok, os.Getppid(), syscall.Getpgrp())
	}
	if gotSid, err := unix.Getsid(0); err == nil && sid != gotSid {
		t.Errorf("statIDs(self) session = %d, want %d", sid, gotSid)
	}
	if _, _, _, ok := statIDs(-5); ok {
		t.Error("statIDs of no process reports one")
	}
}

func TestChildrenOfListsOnlyChildren(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	kids, ok := childrenOf(os.Getpid())
	if !ok {
		t.Skip("this kernel has no /proc/<pid>/task/*/children; adopted() scans /proc instead")
	}
	if !slices.Contains(kids, cmd.Process.Pid) {
		t.Errorf("children %v lack the child %d", kids, cmd.Process.Pid)
	}
	if slices.Contains(kids, os.Getppid()) || slices.Contains(kids, 1) {
		t.Errorf("children %v hold a process that is not a child", kids)
	}
}
