package gatewaybench

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestProfileUnderLoadgen serves the in-process gateway to bench/cmd/loadgen running as a
// separate process, so that a CPU profile of this test holds the gateway's work only (the
// client and the workers are other processes):
//
//	go build -o /tmp/loadgen ./bench/cmd/loadgen
//	GEMGATE_BENCH_LOADGEN=/tmp/loadgen go test ./bench/gatewaybench -run ProfileUnderLoadgen \
//	    -cpuprofile cpu.out -memprofile mem.out -v
//
// GEMGATE_BENCH_SESSIONS (default 32), GEMGATE_BENCH_CALLS per session (default 1000) and
// GEMGATE_BENCH_PAYLOAD (default 100) shape the load; GEMGATE_BENCH_ERA=sessionless sends
// 2026-07-28 requests; GEMGATE_BENCH_AUTH=off turns auth off.
func TestProfileUnderLoadgen(t *testing.T) {
	lg := os.Getenv("GEMGATE_BENCH_LOADGEN")
	if lg == "" {
		t.Skip("set GEMGATE_BENCH_LOADGEN to a loadgen binary")
	}
	f := newFixture(t, os.Getenv("GEMGATE_BENCH_AUTH") != "off")
	args := []string{"-mode", "calls", "-url", f.url, "-pid", strconv.Itoa(os.Getpid()),
		"-sessions", envOr("GEMGATE_BENCH_SESSIONS", "32"), "-calls", envOr("GEMGATE_BENCH_CALLS", "1000"),
		"-payload", envOr("GEMGATE_BENCH_PAYLOAD", "100"), "-era", envOr("GEMGATE_BENCH_ERA", "legacy"),
		"-label", "in-process"}
	if f.token != "" {
		args = append(args, "-token", f.token)
	}
	cmd := exec.Command(lg, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("loadgen: %v: %s", err, stderr.String())
	}
	t.Logf("%s", out)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
