package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// confDir holds the official MCP conformance suite and the Node 22 it needs (test/conformance).
const confDir = "conformance"

// confSuiteTimeout bounds one run of the whole server suite (about 5 s when all is well).
const confSuiteTimeout = 5 * time.Minute

// TestConformance runs every server scenario of the official MCP conformance suite twice:
// against the go-sdk everything-server in its own stateful streamable HTTP mode, and through
// gemgate with the same program as the stdio worker. The suite cannot authenticate, so a
// small proxy in front of gemgate adds alice's dev-issuer token and forwards Host and Origin
// as they came (the DNS-rebinding scenario depends on them). Every scenario must give the
// same checks with the same statuses both ways, and none may fail through gemgate.
func TestConformance(t *testing.T) {
	node, cli := confTool(t)
	scenarios := confScenarios(t, node, cli)
	artifacts := confArtifacts(t)
	server := filepath.Join(t.TempDir(), "everything-server")
	build := exec.Command("go", "build", "-o", server, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the everything-server: %v\n%s", err, out)
	}

	// (a) The everything-server alone. Stateful, as the suite needs: sampling, elicitation and
	// the GET stream are server-to-client requests a stateless server cannot make.
	addr := confStartEverything(t, server)
	start := time.Now()
	direct := confRun(t, node, cli, "http://"+confLocalhost(t, addr)+"/mcp", filepath.Join(artifacts, "direct"))
	directTook := time.Since(start)

	// (b) The same program as gemgate's stdio worker, behind the token-injecting proxy.
	// Every scenario opens a session as alice, one after another: no per-user cap or rate.
	g := startDev(t, "--worker", "command", "--worker-command", server, "--max-sessions-per-user", "0", "--worker-start-rate", "0")
	u, err := url.Parse(g.URL)
	if err != nil {
		t.Fatal(err)
	}
	token := g.Tokens["alice"]
	if token == "" {
		t.Fatal("gemgate dev gave no token for alice")
	}
	confNeedsToken(t, g.URL)
	proxy := confTokenProxy(t, u, token)
	start = time.Now()
	gated := confRun(t, node, cli, "http://"+confLocalhost(t, proxy)+u.Path, filepath.Join(artifacts, "gemgate"))
	gatedTook := time.Since(start)

	for _, r := range []struct {
		name string
		run  confSuiteRun
		took time.Duration
	}{{"direct", direct, directTook}, {"gemgate", gated, gatedTook}} {
		line := fmt.Sprintf("conformance %s: %s (exit %d, %s)", r.name, r.run.Total, r.run.Exit, r.took.Round(time.Millisecond))
		t.Log(line)
		fmt.Println(line)
	}
	confWriteSummary(t, artifacts, scenarios, direct, gated, directTook, gatedTook)

	failed := false
	for _, s := range scenarios {
		d, dok := direct.Scenarios[s]
		gr, gok := gated.Scenarios[s]
		switch {
		case !dok:
			t.Errorf("%s: no result from the direct run", s)
		case !gok:
			t.Errorf("%s: no result through gemgate", s)
		default:
			if diff := cmp.Diff(d.outcome(), gr.outcome()); diff != "" {
				t.Errorf("%s: through gemgate differs from direct (-direct +gemgate):\n%s", s, diff)
				failed = true
			}
			if gr.Failed > 0 {
				t.Errorf("%s: %d check(s) failed through gemgate: %s", s, gr.Failed, gr.failures())
				failed = true
			}
		}
	}
	if direct.Exit != 0 || gated.Exit != 0 {
		t.Errorf("suite exit codes: direct %d, gemgate %d; want 0 both", direct.Exit, gated.Exit)
		failed = true
	}
	confNoToken(t, artifacts, token)
	if failed {
		t.Logf("suite output through gemgate:\n%s", gated.Output)
		t.Logf("gemgate log (last 100 lines):\n%s", confTail(g.logs.String(), 100))
	}
	t.Logf("per-scenario results in %s", artifacts)
}

// confTool is the Node 22 binary and the suite's CLI script. It skips the test when
// test/conformance has not been installed, or fails it when GEMGATE_REQUIRE_NODE=1.
func confTool(t *testing.T) (node, cli string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join(confDir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(dir, "node", "bin", "node")
	cli = filepath.Join(dir, "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, f := range []string{node, cli} {
		if _, err := os.Stat(f); err != nil {
			msg := fmt.Sprintf("%s is missing; run `npm ci --prefix test/conformance`", f)
			if os.Getenv("GEMGATE_REQUIRE_NODE") == "1" {
				t.Fatal(msg + " (GEMGATE_REQUIRE_NODE=1)")
			}
			t.Skip(msg)
		}
	}
	return node, cli
}

// confScenarios asks the suite for its server scenarios, so that a scenario missing from a
// run's summary is noticed.
func confScenarios(t *testing.T, node, cli string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, cli, "list", "--server").CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, out)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s*- (\S+)`).FindAllStringSubmatch(string(out), -1) {
		names = append(names, m[1])
	}
	if len(names) < 30 {
		t.Fatalf("conformance list gave %d server scenarios, expected 32:\n%s", len(names), out)
	}
	return names
}

// confArtifacts is where the per-scenario results go: $GEMGATE_ARTIFACTS/conformance when
// set (CI keeps it), else a temporary directory.
func confArtifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GEMGATE_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	dir, err := filepath.Abs(filepath.Join(dir, "conformance"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// confStartEverything runs the everything-server in its stateful HTTP mode on a free
// loopback port until the test ends, and returns its address once it accepts connections.
func confStartEverything(t *testing.T, server string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var logs bytes.Buffer
	cmd := exec.Command(server, "-http", addr, "-stateless=false")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr
		}
		select {
		case <-done:
			t.Fatalf("everything-server exited: %s", logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("everything-server not listening on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// confLocalhost turns a 127.0.0.1 address into localhost:port: the DNS-rebinding scenario
// needs a localhost URL, whose Host it sends as the valid one.
func confLocalhost(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("localhost", port)
}

// confNeedsToken checks that gemgate refuses the suite's first request without a token, so
// that a pass through the proxy says the token was checked on the way.
func confNeedsToken(t *testing.T, mcpURL string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("initialize without a token: status %d, want 401", resp.StatusCode)
	}
}

// confNoToken checks that the token the proxy added appears nowhere in the artifacts.
func confNoToken(t *testing.T, dir, token string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte(token)) {
			t.Errorf("%s holds the bearer token", path)
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
}

// confTokenProxy serves, on loopback, a reverse proxy to target's host that sets
// Authorization: Bearer token on every request and leaves everything else, Host and Origin
// included, as the client sent it. Responses stream through unbuffered (SSE).
func confTokenProxy(t *testing.T, target *url.URL, token string) string {
	t.Helper()
	origin := &url.URL{Scheme: target.Scheme, Host: target.Host}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(origin)
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() == nil { // a client that went away is no error
				t.Logf("token proxy: %s %s: %v", r.Method, r.URL.Path, err)
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// confSuiteRun is one run of the suite: its exit code, its `Total:` line, its output and
// what each scenario gave.
type confSuiteRun struct {
	Exit      int
	Total     string
	Output    string `json:"-"`
	Scenarios map[string]*confScenario
}

// confScenario is one scenario's result: the counts from the suite's summary and the checks
// from its checks.json.
type confScenario struct {
	Passed int
	Failed int
	Dir    string
	Checks []confCheck
}

// confCheck is one check of checks.json, with the fields that must match between runs.
type confCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// outcome is what must be identical both ways: the suite's counts and the id and status of
// every verdict (SUCCESS, FAILURE, WARNING) in order. INFO entries are the suite's trace of
// what went over the wire (requests sent, events received) and are kept in the artifacts
// only: a stdio worker cannot close an HTTP stream mid-call, so gemgate delivers the answer of
// the server-sse-polling tool on the stream where the everything-server drops it. Error texts
// are not compared either: they may name ports and session ids.
func (s *confScenario) outcome() []string {
	out := []string{fmt.Sprintf("passed=%d failed=%d", s.Passed, s.Failed)}
	for _, c := range s.Checks {
		if c.Status != "INFO" {
			out = append(out, c.ID+" "+c.Status)
		}
	}
	return out
}

func (s *confScenario) failures() string {
	var out []string
	for _, c := range s.Checks {
		if c.Status == "FAILURE" {
			out = append(out, fmt.Sprintf("[%s] %s", c.ID, c.ErrorMessage))
		}
	}
	return strings.Join(out, "; ")
}

var (
	confRunningRE = regexp.MustCompile(`^=== Running scenario: (\S+) ===`)
	confSavedRE   = regexp.MustCompile(`^Results saved to (.+)$`)
	confSummaryRE = regexp.MustCompile(`^[✓✗] (\S+): (\d+) passed, (\d+) failed`)
	confTotalRE   = regexp.MustCompile(`^Total: \d+ passed, \d+ failed`)
)

// confRun runs the suite's whole server suite against mcpURL, its results into out, and
// reads the summary and every scenario's checks.json. The suite's output goes to out/../<name>.log.
func confRun(t *testing.T, node, cli, mcpURL, out string) confSuiteRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), confSuiteTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "server", "--url", mcpURL, "--suite", "all", "--output-dir", out)
	cmd.Dir = t.TempDir()
	cmd.WaitDelay = 5 * time.Second
	output, err := cmd.CombinedOutput()
	if werr := os.WriteFile(out+".log", output, 0o644); werr != nil {
		t.Error(werr)
	}
	run := confSuiteRun{Output: string(output), Scenarios: map[string]*confScenario{}}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		run.Exit = exit.ExitCode()
	case err != nil:
		t.Fatalf("conformance server --url %s: %v\n%s", mcpURL, err, output)
	}
	if ctx.Err() != nil {
		t.Fatalf("conformance server --url %s: not done within %s\n%s", mcpURL, confSuiteTimeout, output)
	}

	dirs := map[string]string{}
	var current string
	sc := bufio.NewScanner(bytes.NewReader(output))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := confRunningRE.FindStringSubmatch(line); m != nil {
			current = m[1]
		} else if m := confSavedRE.FindStringSubmatch(line); m != nil && current != "" {
			dirs[current] = m[1]
		} else if m := confSummaryRE.FindStringSubmatch(line); m != nil {
			p, _ := strconv.Atoi(m[2])
			f, _ := strconv.Atoi(m[3])
			run.Scenarios[m[1]] = &confScenario{Passed: p, Failed: f}
		} else if confTotalRE.MatchString(line) {
			run.Total = line
		}
	}
	if run.Total == "" {
		t.Fatalf("conformance server --url %s printed no Total line (exit %d):\n%s", mcpURL, run.Exit, output)
	}
	for name, s := range run.Scenarios {
		dir, ok := dirs[name]
		if !ok {
			t.Errorf("%s: the suite saved no results", name)
			continue
		}
		s.Dir, _ = filepath.Rel(filepath.Dir(out), dir)
		b, err := os.ReadFile(filepath.Join(dir, "checks.json"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err := json.Unmarshal(b, &s.Checks); err != nil {
			t.Errorf("%s: checks.json: %v", name, err)
		}
	}
	return run
}

// confWriteSummary writes summary.json into the artifacts: per scenario, both runs' counts
// and checks, and whether they agree.
func confWriteSummary(t *testing.T, dir string, scenarios []string, direct, gated confSuiteRun, directTook, gatedTook time.Duration) {
	t.Helper()
	type row struct {
		Scenario string
		Same     bool
		Direct   *confScenario
		Gemgate  *confScenario
	}
	summary := struct {
		Suite     string
		Server    string
		Direct    confSuiteRun
		Gemgate   confSuiteRun
		DirectMs  int64
		GemgateMs int64
		Scenarios []row
	}{
		Suite:     "@modelcontextprotocol/conformance server --suite all",
		Server:    "github.com/modelcontextprotocol/go-sdk/conformance/everything-server",
		Direct:    confSuiteRun{Exit: direct.Exit, Total: direct.Total},
		Gemgate:   confSuiteRun{Exit: gated.Exit, Total: gated.Total},
		DirectMs:  directTook.Milliseconds(),
		GemgateMs: gatedTook.Milliseconds(),
	}
	if b, err := os.ReadFile(filepath.Join(confDir, "node_modules", "@modelcontextprotocol", "conformance", "package.json")); err == nil {
		var p struct{ Version string }
		if json.Unmarshal(b, &p) == nil {
			summary.Suite = "@modelcontextprotocol/conformance@" + p.Version + " server --suite all"
		}
	}
	for _, s := range scenarios {
		d, g := direct.Scenarios[s], gated.Scenarios[s]
		same := d != nil && g != nil && slices.Equal(d.outcome(), g.outcome())
		summary.Scenarios = append(summary.Scenarios, row{Scenario: s, Same: same, Direct: d, Gemgate: g})
	}
	b, err := json.MarshalIndent(summary, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// confTail is the last n lines of s.
func confTail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
