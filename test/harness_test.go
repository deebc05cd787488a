package test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemgate/gemgate/worker/demo"
)

// gemgateBin is the gemgate binary built once for the whole run, with the race detector;
// workerBin is the same program built plainly, for the demo workers: hundreds of
// race-instrumented workers would measure the detector, not gemgate.
var gemgateBin, workerBin string

func TestMain(m *testing.M) {
	flag.Parse()
	raiseParallel()
	dir, err := os.MkdirTemp("", "gemgate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gemgateBin = filepath.Join(dir, "gemgate")
	workerBin = filepath.Join(dir, "gemgate-worker")
	// Both at once: with a warm build cache each is mostly a link, which uses one core.
	var builds sync.WaitGroup
	failed := make(chan error, 2)
	for _, b := range [][]string{{"-race", "-o", gemgateBin}, {"-o", workerBin}} {
		builds.Go(func() {
			build := exec.Command("go", append(append([]string{"build"}, b...), "../cmd/gemgate")...)
			build.Stdout, build.Stderr = os.Stdout, os.Stderr
			if err := build.Run(); err != nil {
				failed <- err
			}
		})
	}
	builds.Wait()
	close(failed)
	if err := <-failed; err != nil {
		fmt.Fprintln(os.Stderr, "building gemgate:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// e2eParallel is how many parallel e2e tests run at once per core, unless -test.parallel
// says otherwise. These tests spend most of their time waiting on child processes, timeouts
// and the network, not computing: the default of one per core leaves the cores idle.
const e2eParallel = 3

func raiseParallel() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(e2eParallel*runtime.GOMAXPROCS(0)))
	}
}

// cpuBound makes the CPU-bound e2e tests (thousands of calls through the race-instrumented
// gemgate) take turns. Beside each other on two cores they run toward their deadlines;
// beside the tests that mostly wait they cost those little. Call it after t.Parallel.
func cpuBound(t *testing.T) {
	t.Helper()
	heavy.Lock()
	t.Cleanup(heavy.Unlock) // registered first, so it runs last: after gemgate has stopped
}

var heavy sync.Mutex

// devInfo mirrors what `gemgate dev --json` prints.
type devInfo struct {
	URL      string            `json:"url"`
	Metadata string            `json:"metadata"`
	Auth     string            `json:"auth"`
	Issuer   string            `json:"issuer"`
	Tokens   map[string]string `json:"tokens"`
	Clients  []struct {
		ID     string   `json:"id"`
		Secret string   `json:"secret"`
		User   string   `json:"user"`
		Scopes []string `json:"scopes"`
	} `json:"clients"`
	Metrics string `json:"metrics"`
	DataDir string `json:"data_dir"`
	// As root with no sandbox: who the workers run as, and their data directory.
	WorkerUser     string `json:"worker_user"`
	WorkersDataDir string `json:"workers_data_dir"`
}

// gemgate is one running gemgate process.
type gemgate struct {
	devInfo
	cmd  *exec.Cmd
	logs *logBuffer
	done chan error
}

type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) add(s string) { b.mu.Lock(); b.lines = append(b.lines, s); b.mu.Unlock() }

// String is everything gemgate logged so far.
func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// startDev runs `gemgate dev --json` on a free loopback port with extra flags, and waits
// until it is ready. Its workers are the demo worker from the plain build unless flags say
// otherwise (later flags win). The process is stopped with SIGTERM at cleanup and must exit 0 with no
// worker left behind.
func startDev(t *testing.T, flags ...string) *gemgate {
	t.Helper()
	return startDevIn(t, "", flags...)
}

// startDevIn is startDev with gemgate's working directory set to dir ("" for the test's).
func startDevIn(t *testing.T, dir string, flags ...string) *gemgate {
	t.Helper()
	args := append([]string{"dev", "--json", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-format", "json", "--log-level", "debug",
		"--worker", "command", "--worker-command", workerBin + " worker demo",
		"--read-only-tools", strings.Join(demo.ReadOnlyTools, ",")}, flags...)
	return launch(t, launchOpts{Args: args, Dir: dir, FirstStdout: func(g *gemgate, line []byte) error {
		return json.Unmarshal(line, &g.devInfo)
	}})
}

// launchOpts says how to start one gemgate process and how to tell it is ready: by its first
// line on stdout (gemgate dev --json), by a log line, or by a check polled every 50 ms.
type launchOpts struct {
	Args, Env   []string
	Dir         string
	FirstStdout func(g *gemgate, line []byte) error
	LogLine     func(g *gemgate, line []byte) bool
	Poll        func(g *gemgate) bool
}

// launch starts gemgate, collects its log, and returns once it is ready. It fails the test if
// gemgate exits first or is not ready within a minute. At cleanup the process is stopped and
// must exit 0 with no worker left behind.
func launch(t *testing.T, o launchOpts) *gemgate {
	t.Helper()
	cmd := exec.Command(gemgateBin, o.Args...)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Dir = o.Dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &gemgate{cmd: cmd, logs: &logBuffer{}, done: make(chan error, 1)}
	ready := make(chan error, 1)
	signal := func(err error) {
		select {
		case ready <- err:
		default:
		}
	}
	var readers sync.WaitGroup
	readers.Go(func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			g.logs.add(sc.Text())
			if o.LogLine != nil && o.LogLine(g, sc.Bytes()) {
				signal(nil)
			}
		}
	})
	readers.Go(func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for first := true; sc.Scan(); first = false {
			if first && o.FirstStdout != nil {
				signal(o.FirstStdout(g, sc.Bytes()))
			}
		}
		if o.FirstStdout != nil {
			signal(fmt.Errorf("gemgate printed nothing on stdout"))
		}
	})
	// Wait closes the pipes, so it waits for the readers to see the end of them first.
	go func() { readers.Wait(); g.done <- cmd.Wait() }()

	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case err := <-ready:
			if err != nil {
				cmd.Process.Kill()
				t.Fatalf("gemgate %s: %v\nlogs:\n%s", o.Args[0], err, g.logs)
			}
			t.Cleanup(func() { g.stop(t) })
			return g
		case err := <-g.done:
			t.Fatalf("gemgate %s exited early: %v\nlogs:\n%s", o.Args[0], err, g.logs)
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("gemgate %s not ready in time\nlogs:\n%s", o.Args[0], g.logs)
		case <-poll.C:
			if o.Poll != nil && o.Poll(g) {
				signal(nil)
			}
		}
	}
}

// stop ends gemgate with SIGTERM and checks that it exits 0 and leaves no worker behind.
func (g *gemgate) stop(t *testing.T) {
	t.Helper()
	if g.cmd.ProcessState != nil {
		return
	}
	workers := childPIDs(g.cmd.Process.Pid)
	g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-g.done:
		if err != nil {
			t.Errorf("gemgate exited with %v\nlogs:\n%s", err, g.logs)
		}
	case <-time.After(30 * time.Second):
		g.cmd.Process.Kill()
		t.Errorf("gemgate did not stop within 30s of SIGTERM")
	}
	for _, pid := range workers {
		waitGone(t, pid)
	}
}

// childPIDs lists the live processes whose parent is pid, from the process table.
func childPIDs(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var p int
		if _, err := fmt.Sscanf(e.Name(), "%d", &p); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		var ppid int
		if len(fields) > 1 && fields[0] != "Z" {
			fmt.Sscanf(fields[1], "%d", &ppid)
		}
		if ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if !alive(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("process %d is still running", pid)
}

// pollUntil checks cond every 20 ms until it holds, and fails the test if it does not
// within the deadline. gemgate's log reaches the test through a pipe and a reader
// goroutine, so even a line gemgate wrote before it answered may arrive after the answer:
// tests wait for a log line, they do not look once.
func pollUntil(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poll(within, cond) {
		t.Fatalf("waited %v for %s", within, what)
	}
}

// poll asks cond every 20 ms until it holds or within has passed, and reports whether it held:
// pollUntil for a caller that judges the outcome itself.
func poll(within time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(within); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// workers is the number of worker processes gemgate has running now.
func (g *gemgate) workers() int { return len(childPIDs(g.cmd.Process.Pid)) }

// waitWorkers waits until gemgate has exactly n workers.
func (g *gemgate) waitWorkers(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if g.workers() == n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("gemgate has %d workers, want %d", g.workers(), n)
}

// bearerTransport adds a fixed bearer token to every request.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

func httpClientWithToken(token string) *http.Client {
	return &http.Client{Transport: bearerTransport{token: token, base: http.DefaultTransport}}
}

// connect opens an MCP session with the official Go SDK client, sending token on every request.
func connect(t *testing.T, url, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "gemgate-e2e", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A legacy session (2025-11-25), as the tests that use this are about sessions; the
	// client would otherwise speak 2026-07-28 first (connectSessionless in sessionless_test.go).
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClientWithToken(token)},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}
