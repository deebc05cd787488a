package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/gateway/limit"
	"github.com/gemgate/gemgate/worker"
)

// The four caps in each of their forms: auto sized from the host, none and 0 lifting one, a
// value, and what is refused, every problem listed.
func TestWorkerCapsSettings(t *testing.T) {
	c := mustLoad(t)
	v, errs := c.workerCapsValues()
	want := worker.Caps{MemoryBytes: defaultWorkerMemory(limit.HostCapacity().MemoryBytes), Pids: 256, CPU: max(float64(runtime.NumCPU())/2, 1), OpenFiles: 1024}
	if len(errs) > 0 || v != want {
		t.Errorf("defaults: %+v %v, want %+v", v, errs, want)
	}
	if m := want.MemoryBytes; m < 1<<30 || m > 4<<30 || m%(1<<20) != 0 {
		t.Errorf("default memory cap %d: want whole MiB between 1 GiB and 4 GiB", m)
	}
	c = mustLoad(t, "--worker-memory-max", "512MiB", "--worker-pids-max", "none", "--worker-cpu-max", "0.5", "--worker-open-files-max", "0")
	if v, errs := c.workerCapsValues(); len(errs) > 0 || v != (worker.Caps{MemoryBytes: 512 << 20, CPU: 0.5}) {
		t.Errorf("set: %+v %v", v, errs)
	}
	for in, n := range map[string]int64{"2G": 2 << 30, "2 GiB": 2 << 30, "1.5G": 3 << 29, "100M": 100 << 20, "67108864": 64 << 20, "1T": 1 << 40} {
		if got, err := parseBytes(in); err != nil || got != n {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, n)
		}
	}
	c = mustLoad(t, "--worker-memory-max", "lots", "--worker-pids-max", "3", "--worker-cpu-max", "NaN", "--worker-open-files-max", "-1")
	_, errs = c.workerCapsValues()
	joined := configErrors(errs).Error()
	for _, key := range []string{"worker_memory_max", "worker_pids_max", "worker_cpu_max", "worker_open_files_max"} {
		if !strings.Contains(joined, key) {
			t.Errorf("no problem listed for %s: %s", key, joined)
		}
	}
	if len(c.validate()) < 4 {
		t.Errorf("validate lists %d problems, want the four caps among them", len(c.validate()))
	}
}

// One setting, three spellings: config key, flag, environment.
func TestWorkerCapsThreeSpellings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gemgate.yaml")
	os.WriteFile(file, []byte("worker_memory_max: 300MiB\nworker_cpu_max: 1.5\n"), 0o600)
	t.Setenv("GEMGATE_WORKER_PIDS_MAX", "99")
	c := mustLoad(t, "--config", file, "--worker-open-files-max", "4096")
	if v, errs := c.workerCapsValues(); len(errs) > 0 || v != (worker.Caps{MemoryBytes: 300 << 20, Pids: 99, CPU: 1.5, OpenFiles: 4096}) {
		t.Errorf("%+v %v", v, errs)
	}
}

// Under rlimits, RLIMIT_NPROC counts a uid's processes across the host, so it is sized for
// the account the workers share, and not set where it would count gemgate's own threads or
// cannot hold (uid 0).
func TestRlimitProcessCapFollowsTheWorkerAccount(t *testing.T) {
	if _, err := os.Stat("/proc/self/cgroup"); err != nil {
		t.Fatal(err)
	}
	c := mustLoad(t, "--max-workers", "10")
	caps, describe, err := c.workerCaps(false)
	if err != nil {
		t.Fatal(err)
	}
	if caps.Cgroup != nil {
		// A delegated cgroup: pids.max per worker, and no RLIMIT_NPROC.
		if caps.Pids != 256 || caps.Nproc != 0 || !strings.Contains(describe, "cgroup v2 at ") {
			t.Errorf("cgroup caps %+v: %s", caps, describe)
		}
		return
	}
	if caps.Nproc != 0 || !strings.Contains(describe, "processes not capped") || !strings.Contains(describe, "rlimits") {
		t.Errorf("workers of gemgate's uid: Nproc %d, %s", caps.Nproc, describe)
	}
	if !strings.Contains(describe, "no delegated cgroup v2: ") {
		t.Errorf("the log does not say why not a cgroup: %s", describe)
	}
	c.WorkerUser = "nobody"
	if caps, _, _ := c.workerCaps(false); caps.Nproc != 2560 {
		t.Errorf("one account for all workers: Nproc %d, want 256 × 10", caps.Nproc)
	}
	c.WorkerUser = "mcp-{user}"
	if caps, _, _ := c.workerCaps(false); caps.Nproc != 256 {
		t.Errorf("one account per user: Nproc %d, want 256", caps.Nproc)
	}
	c.WorkerPidsMax = "none"
	if caps, _, _ := c.workerCaps(false); caps.Nproc != 0 {
		t.Errorf("worker_pids_max none: Nproc %d", caps.Nproc)
	}
}

// The start log and `gemgate check` name the mechanism in force and the values.
func TestCapsMechanismIsLoggedAndChecked(t *testing.T) {
	c := mustLoad(t, unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--log-format", "json",
		"--worker-memory-max", "640MiB", "--worker-open-files-max", "777")...)
	_, logs := buildLoggedServer(t, c)
	if !strings.Contains(logs.String(), `"msg":"worker caps: `) || !strings.Contains(logs.String(), `"open_files_max":777`) ||
		!strings.Contains(logs.String(), "640MiB") || !strings.Contains(logs.String(), `"mechanism":"`) {
		t.Errorf("start log:\n%s", logs)
	}
	var out, errb bytes.Buffer
	checkCommand(context.Background(), unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--worker-memory-max", "640MiB"), &out, &errb)
	if !strings.Contains(out.String(), "worker caps: ") || !strings.Contains(out.String(), "640MiB") {
		t.Errorf("check:\n%s", out.String())
	}
}

// serve never runs workers unsandboxed by default: auto without a working bubblewrap refuses
// to start and says how to fix it; gemgate dev runs on and says so.
func TestAutoWithoutSandboxRefusesToServe(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no bwrap
	c := mustLoad(t, "--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off")
	_, _, err := c.workerIsolation(context.Background())
	if !errors.Is(err, ErrNoSandbox) {
		t.Fatalf("serve, auto, no bubblewrap: %v; want ErrNoSandbox", err)
	}
	for _, fix := range []string{"install bubblewrap", "user namespaces", "worker_sandbox: none", "/proc/<pid>/mem", "signals"} {
		if !strings.Contains(err.Error(), fix) {
			t.Errorf("the refusal does not say %q: %v", fix, err)
		}
	}
	var out, errb bytes.Buffer
	if code := checkCommand(context.Background(), []string{"--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off"}, &out, &errb); code == 0 ||
		!strings.Contains(out.String(), "PROBLEM  worker_sandbox: auto") {
		t.Errorf("check: exit %d:\n%s", code, out.String())
	}
	err = serveCommand(context.Background(), []string{"--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off"}, &out, &errb)
	if !errors.Is(err, ErrNoSandbox) {
		t.Errorf("serve started without a sandbox: %v", err)
	}

	dev, err := load("dev", []string{"--listen", "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	bwrap, describe, err := dev.workerIsolation(context.Background())
	if err != nil || bwrap != "" || !strings.HasPrefix(describe, "worker sandbox: none (auto: ") {
		t.Errorf("dev without a sandbox: %q %q %v; want it to run on, unsandboxed", bwrap, describe, err)
	}
}

// worker_sandbox none is the operator's choice, and every start says at warning level what it
// costs: memory readable through /proc/<pid>/mem, and signals to other workers and gemgate.
func TestNoSandboxWarnsAtEveryStart(t *testing.T) {
	for range 2 {
		c := mustLoad(t, unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--log-format", "json")...)
		_, logs := buildLoggedServer(t, c)
		var line string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "worker sandbox: none") {
				line = l
			}
		}
		for _, want := range []string{`"level":"WARN"`, "NOT isolated", "/proc/<pid>/mem", "signals"} {
			if !strings.Contains(line, want) {
				t.Errorf("the start log's sandbox line lacks %q: %s", want, line)
			}
		}
	}
}

// gemgate dev's banner says when its workers are not sandboxed.
func TestDevBannerSaysUnsandboxed(t *testing.T) {
	var b bytes.Buffer
	printDevInfo(&b, devInfo{URL: "http://127.0.0.1:1/mcp", Auth: "none", Sandbox: "none"})
	if !strings.Contains(b.String(), "sandbox        NONE") {
		t.Errorf("banner:\n%s", b.String())
	}
	b.Reset()
	printDevInfo(&b, devInfo{URL: "http://127.0.0.1:1/mcp", Auth: "none", Sandbox: "bwrap"})
	if strings.Contains(b.String(), "NONE") {
		t.Errorf("banner of a sandboxed dev:\n%s", b.String())
	}
}

// The banner's Inspector command names the Inspector 2.x: on a Node older than 22.19 a bare
// `npx @modelcontextprotocol/inspector` resolves to 0.15, which reads --header as arguments
// for a stdio server and stops ("Arguments cannot be passed to a URL-based MCP server").
func TestDevBannerInspectorIsVersion2(t *testing.T) {
	for _, info := range []devInfo{{URL: "http://127.0.0.1:1/mcp", Auth: "none"},
		{URL: "http://127.0.0.1:1/mcp", Auth: "oidc", Issuer: "http://127.0.0.1:2", Tokens: map[string]string{"alice": "t"}}} {
		var b bytes.Buffer
		printDevInfo(&b, info)
		if strings.Count(b.String(), "npx -y @modelcontextprotocol/inspector@2 --cli ") != 1 {
			t.Errorf("banner:\n%s", b.String())
		}
	}
}
