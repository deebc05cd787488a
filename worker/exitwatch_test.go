package worker

import (
	"runtime"
	"testing"
	"time"
)

// TestRunningWorkerGoroutines: a running worker keeps two goroutines of the gateway's, its
// stdout and stderr readers; its exit is waited for by one goroutine for all workers.
func TestRunningWorkerGoroutines(t *testing.T) {
	const n = 20
	stable := func() int {
		// Goroutines of workers stopped by earlier tests may still be ending.
		runtime.GC()
		return runtime.NumGoroutine()
	}
	before := stable()
	var ps []*Process
	for range n {
		ps = append(ps, startFake(t, "echo", nil))
	}
	for _, p := range ps {
		call(t, p, `1`, "ping", "") // each is up and answering
	}
	perWorker := float64(stable()-before) / n
	if perWorker > 2.2 {
		t.Errorf("%.2f goroutines per running worker, want 2", perWorker)
	}
	// And each exit is still seen.
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
