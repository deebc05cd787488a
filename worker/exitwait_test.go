//go:build linux

package worker

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// threads is the number of OS threads of this process.
func threads(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// TestRunningWorkersHoldNoThread: a running worker's exit is awaited on its pidfd in the
// runtime's poller, not by an OS thread blocked in waitid for the worker's whole life; and
// each exit is still seen.
func TestRunningWorkersHoldNoThread(t *testing.T) {
	const n = 20
	before := threads(t)
	var ps []*Process
	for range n {
		ps = append(ps, startFake(t, "echo", nil))
	}
	for _, p := range ps {
		call(t, p, `1`, "ping", "") // each is up and answering
	}
	if added := threads(t) - before; added >= n/2 {
		t.Errorf("%d running workers added %d threads, want none per worker", n, added)
	}
	for _, p := range ps {
		go p.Stop()
	}
	for _, p := range ps {
		select {
		case <-p.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("a stopped worker was never seen to exit")
		}
	}
}
