package main

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The workers' CPU counts every process under the one measured, a grandchild as well as a
// child (a gateway may start its workers through a shell or a sandbox), and the machine's busy
// time over the same phase holds at least that much.
func TestTreeCPUCountsEveryDescendant(t *testing.T) {
	// The child shell starts a grandchild that spins, prints the grandchild's id, and waits.
	cmd := exec.Command("sh", "-c", `sh -c 'while :; do :; done' & echo $!; wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	buf := make([]byte, 32)
	n, err := out.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("grandchild id %q: %v", buf[:n], err)
	}

	before := treeCPU(os.Getpid())
	busy0, cpus, err := busyCPUSeconds()
	if err != nil || cpus < 1 {
		t.Fatalf("busyCPUSeconds: %v, %d CPUs", err, cpus)
	}
	deadline := time.Now().Add(30 * time.Second)
	var used float64
	for used < 0.2 {
		if time.Now().After(deadline) {
			t.Fatalf("the spinning grandchild's CPU was never counted: %.2f s", used)
		}
		time.Sleep(20 * time.Millisecond)
		used = treeCPUSince(os.Getpid(), before)
	}
	busy1, _, _ := busyCPUSeconds()

	if d := descendants(os.Getpid()); !slices.Contains(d, cmd.Process.Pid) || !slices.Contains(d, grandchild) {
		t.Errorf("descendants %v: want the child %d and the grandchild %d", d, cmd.Process.Pid, grandchild)
	}
	if own, _ := cpuSeconds(grandchild); own < used-0.05 {
		t.Errorf("the tree used %.2f s, more than the only busy process in it, %.2f s", used, own)
	}
	if busy1-busy0 < used/2 {
		t.Errorf("the machine was busy %.2f s while the tree under it used %.2f s", busy1-busy0, used)
	}
}
