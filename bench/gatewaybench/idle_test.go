package gatewaybench

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/gemgate/gemgate/worker"
)

// benchLauncher starts the test binary as the demo worker, or, with GEMGATE_BENCH_WORKER_CMD
// set, that program (bench/tinyworker): a thousand idle sessions of Go demo workers would
// cost the machine gigabytes, a thousand tinyworkers a few megabytes, and the gateway's own
// heap is the same either way.
func benchLauncher(exe, dataDir string) *worker.CommandLauncher {
	if cmd := os.Getenv("GEMGATE_BENCH_WORKER_CMD"); cmd != "" {
		return &worker.CommandLauncher{Command: []string{cmd}}
	}
	return &worker.CommandLauncher{
		Command: []string{exe},
		Env:     []string{workerEnv + "=demo", "GEMGATE_DATA_DIR=" + dataDir},
	}
}

// logGoroutines logs the goroutine count per idle session and, with
// GEMGATE_BENCH_GOROUTINES=FILE, writes the goroutine profile (stacks grouped) there, so
// that what each idle session keeps running can be read off.
func logGoroutines(t *testing.T, k int) {
	n := runtime.NumGoroutine()
	t.Logf("%d goroutines for %d idle sessions: %.2f per session (client side included)", n, k, float64(n)/float64(k))
	path := os.Getenv("GEMGATE_BENCH_GOROUTINES")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("goroutine").WriteTo(f, 1); err != nil {
		t.Fatal(err)
	}
}

func stackInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.StackInuse
}
