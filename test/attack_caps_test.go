package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemgate/gemgate/auth/devissuer"
)

// The resource caps against a runaway or hostile worker (testdata/capsworker), through the
// real binary: a worker that takes memory, or starts processes, past its cap fails alone;
// its pending calls get errors; other users go on being served. And serve's default sandbox:
// it refuses to run workers unsandboxed unless worker_sandbox is none.

// capsWorkerBin builds the caps worker into a directory every account may enter.
func capsWorkerBin(t *testing.T) (bin, dir string) {
	t.Helper()
	dir = searchableTempDir(t)
	b, err := os.ReadFile(buildTestdata(t, "capsworker"))
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "capsworker")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

// callToolErr is callTool that returns the call's error rather than failing the test.
func callToolErr(cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

func TestAttackCapsWorkerFailsAlone(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("the caps attack test runs workers under an account of their own (worker_user), which needs root; CI runs as root")
	}
	bin, dir := capsWorkerBin(t)
	const resource = "urn:gemgate:caps"
	iss, err := devissuer.Start(devissuer.Options{Audience: resource})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { iss.Close() })
	// RLIMIT_NPROC counts every process of a uid on the host: the workers get a uid no other
	// process has (a bare uid, without an account entry, as worker_user allows), so that
	// nothing else on the machine spends their budget.
	uid := strconv.Itoa(47000 + os.Getpid()%1000)
	g := startServe(t, "--issuer", iss.URL(), "--audiences", resource, "--worker", "command", "--worker-command", bin,
		"--read-only-tools", "echo", "--data-dir", dir, "--worker-user", uid,
		"--worker-memory-max", "256MiB", "--worker-pids-max", "16", "--max-workers", "8")
	logs := g.logs.String()
	if !strings.Contains(logs, "worker sandbox: bwrap") {
		t.Fatalf("gemgate did not sandbox its workers:\n%s", logs)
	}
	cgroup := strings.Contains(logs, `"mechanism":"cgroup2"`)
	if !cgroup && !strings.Contains(logs, `"mechanism":"rlimits"`) {
		t.Fatalf("the start log does not say which caps are in force:\n%s", logs)
	}
	mint := func(user string) string {
		tok, err := iss.Mint(user, []string{"mcp:use", "mcp:write"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	alice := connect(t, g.URL, mint("alice"), nil)
	var limits map[string]string
	if err := json.Unmarshal([]byte(text(callTool(t, alice, "limits", nil))), &limits); err != nil {
		t.Fatal(err)
	}
	t.Logf("alice's worker: %v", limits)
	want := map[string]string{"uid": uid, "nofile": "1024", "data": strconv.Itoa(256 << 20), "nproc": strconv.Itoa(16 * 8)}
	if cgroup {
		want = map[string]string{"uid": uid, "nofile": "1024"}
		if !strings.Contains(limits["cgroup"], "/worker-") {
			t.Errorf("alice's worker is not in a cgroup of its own: %q", limits["cgroup"])
		}
	}
	for k, v := range want {
		if limits[k] != v {
			t.Errorf("alice's worker: %s = %q, want %q", k, limits[k], v)
		}
	}

	for _, attack := range []struct {
		tool    string
		args    map[string]any
		stderr  string // what the worker says as it fails, under rlimits
		capName string // what gemgate says, under a cgroup
	}{
		{"alloc", map[string]any{"mib": 1024}, "out of memory", "memory"},
		{"fork", map[string]any{"n": 200}, "cannot start a process", "processes"},
	} {
		t.Run(attack.tool, func(t *testing.T) {
			mallory := connect(t, g.URL, mint("mallory-"+attack.tool), nil)
			callTool(t, mallory, "echo", nil) // mallory's worker runs
			// Two calls in flight at once: the worker takes one and dies of it; the other is
			// pending behind it. Both get errors.
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range errs {
				wg.Go(func() {
					res, err := callToolErr(mallory, attack.tool, attack.args)
					if err == nil {
						err = fmt.Errorf("answered: %s", text(res))
						if res.IsError {
							err = nil
						}
						errs[i] = err
						return
					}
					errs[i] = nil
					if !strings.Contains(err.Error(), "worker exited") {
						errs[i] = fmt.Errorf("failed, but not as a worker's exit: %w", err)
					}
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("mallory's call %d past the %s cap: %v", i, attack.capName, err)
				}
			}
			want := attack.stderr
			if cgroup {
				want = "worker reached its " + attack.capName + " cap"
			}
			if !logShows(g, want, 10*time.Second) {
				t.Errorf("the log does not show %q", want)
			}
			// The others are served: alice's worker, which ran all along, and bob, new.
			if got := text(callTool(t, alice, "echo", nil)); !strings.Contains(got, "true") {
				t.Errorf("alice after mallory's %s: %s", attack.tool, got)
			}
			bob := connect(t, g.URL, mint("bob-"+attack.tool), nil)
			if got := text(callTool(t, bob, "echo", nil)); !strings.Contains(got, "true") {
				t.Errorf("bob after mallory's %s: %s", attack.tool, got)
			}
			// And mallory's next request gets a fresh worker.
			if got := text(callTool(t, mallory, "echo", nil)); !strings.Contains(got, "true") {
				t.Errorf("mallory after the failed worker: %s", got)
			}
		})
	}
}

// serve does not fall back to unsandboxed workers: without a working bubblewrap it refuses to
// start and says how to fix it; with worker_sandbox none it starts and warns, naming what an
// unsandboxed worker can do. gemgate dev runs on, and its banner says so.
func TestAttackCapsServeRefusesNoSandbox(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	noBwrap := t.TempDir() // a PATH without bubblewrap
	serve := exec.CommandContext(ctx, gemgateBin, "serve", "--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--data-dir", t.TempDir())
	serve.Env = append(os.Environ(), "PATH="+noBwrap)
	out, err := serve.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "worker_sandbox: none") || !strings.Contains(string(out), "install bubblewrap") {
		t.Errorf("serve without a sandbox: %v\n%s", err, out)
	}

	flags := []string{"--auth", "none", "--worker-sandbox", "none"}
	if os.Geteuid() == 0 {
		flags = append(flags, "--worker-user", "nobody")
	}
	g := startServeEnv(t, []string{"PATH=" + noBwrap}, flags...)
	if !logShows(g, `"level":"WARN","msg":"worker sandbox: none (worker_sandbox=none); workers are NOT isolated"`, 10*time.Second) ||
		!strings.Contains(g.logs.String(), "/proc/<pid>/mem") || !strings.Contains(g.logs.String(), "signals") {
		t.Errorf("serve with worker_sandbox none does not warn what that costs:\n%s", g.logs)
	}

	dev := exec.CommandContext(ctx, gemgateBin, "dev", "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--data-dir", t.TempDir(), "--json")
	dev.Env = append(os.Environ(), "PATH="+noBwrap, "TMPDIR="+searchableTempDir(t))
	stdout, err := dev.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	defer dev.Wait()
	defer dev.Process.Kill()
	var info struct {
		URL     string `json:"url"`
		Sandbox string `json:"sandbox"`
	}
	if err := json.NewDecoder(stdout).Decode(&info); err != nil || info.URL == "" || info.Sandbox != "none" {
		t.Errorf("gemgate dev without bubblewrap: %+v %v; want it serving, sandbox none", info, err)
	}
}
