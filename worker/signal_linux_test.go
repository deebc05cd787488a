package worker

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
)

func TestProcessGroup(t *testing.T) {
	if got, want := processGroup(os.Getpid()), syscall.Getpgrp(); got != want {
		t.Errorf("processGroup(self) = %d, want %d", got, want)
	}
	if got := processGroup(-5); got != -1 {
		t.Errorf("processGroup of no process = %d, want -1", got)
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
