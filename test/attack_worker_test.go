package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gemgate/gemgate/auth/devissuer"
)

// The attacks of a hostile worker (testdata/hostileworker) against its neighbours, through
// the real binary: reading gemgate's and other workers' secrets from /proc, leaving a
// descendant behind, pinning gemgate by not reading, and sending invalid UTF-8.

// hostileWorker builds the hostile worker into a directory every account may enter, so that
// workers running as nobody can start it; the directory also serves as a data directory
// nobody can bind.
func hostileWorker(t *testing.T) (bin, dir string) {
	t.Helper()
	dir = searchableTempDir(t)
	// A copy in a directory every account can read: the build directory is the test's alone.
	b, err := os.ReadFile(buildTestdata(t, "hostileworker"))
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "hostileworker")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

// scanReport is what the hostile worker's scan tool answers.
type scanReport struct {
	Pids            []string            `json:"pids"`
	EnvironReadable int                 `json:"environ_readable"`
	Found           []string            `json:"found"`
	JWTs            map[string][]string `json:"jwts"`
}

type credReport struct {
	Source string `json:"source"`
	SHA256 string `json:"sha256"`
	UID    int    `json:"uid"`
}

// TestAttackWorkerReadsNoSecret: bob's worker scans every /proc/<pid>/environ, cmdline and
// memory it can reach for gemgate's exchange client secret (a canary in gemgate's
// environment), alice's bearer token, and alice's worker credential. In the default mode it
// finds none of them; without a sandbox, the credential handed on a descriptor still keeps
// alice's credential out of every environment. The last case is the control: with the
// credential in the environment and no sandbox, the same scan does find it.
func TestAttackWorkerReadsNoSecret(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("the worker isolation attack tests need root (worker_user); CI runs as root")
	}
	bin, _ := hostileWorker(t)
	for _, tc := range []struct {
		name      string
		flags     []string
		sandboxed bool
		uid       int
		control   bool // the weakened setup: the attack must succeed
	}{
		{name: "default", sandboxed: true, uid: 0},
		{name: "sandbox as nobody", flags: []string{"--worker-user", "nobody"}, sandboxed: true, uid: 65534},
		{name: "no sandbox as nobody", flags: []string{"--worker-sandbox", "none", "--worker-user", "nobody"}, uid: 65534},
		{name: "control: no sandbox, credential in env", flags: []string{"--worker-sandbox", "none", "--worker-user", "nobody", "--worker-credential-env"}, uid: 65534, control: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const resource = "urn:gemgate:attack"
			iss, canary := canaryIssuer(t, resource)
			flags := append([]string{"--issuer", iss.URL(), "--audiences", resource, "--worker", "command", "--worker-command", bin,
				"--worker-credential", "exchange", "--exchange-client-id", "gemgate", "--exchange-audience", "backend",
				"--data-dir", searchableTempDir(t)}, tc.flags...) // its own: each user's folder belongs to the case's account
			g := startServeEnv(t, []string{"GEMGATE_EXCHANGE_CLIENT_SECRET=" + canary}, flags...) // in gemgate's /proc/<pid>/environ
			wantMode := "worker sandbox: none"
			if tc.sandboxed {
				wantMode = "worker sandbox: bwrap"
			}
			if !strings.Contains(g.logs.String(), wantMode) {
				t.Fatalf("gemgate did not log %q at start\nlogs:\n%s", wantMode, g.logs)
			}
			mint := func(user string) string {
				tok, err := iss.Mint(user, []string{"mcp:use", "mcp:write"}, time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				return tok
			}
			aliceToken := mint("alice")
			alice := connect(t, g.URL, aliceToken, nil) // the victim: its worker holds alice's credential
			var victim credReport
			if err := json.Unmarshal([]byte(text(callTool(t, alice, "credential", nil))), &victim); err != nil {
				t.Fatal(err)
			}
			wantSource := "fd"
			if tc.control {
				wantSource = "env"
			}
			if victim.Source != wantSource || victim.UID != tc.uid {
				t.Fatalf("victim worker got its credential by %q as uid %d; want %s, uid %d", victim.Source, victim.UID, wantSource, tc.uid)
			}

			bob := connect(t, g.URL, mint("bob"), nil)
			var rep scanReport
			out := text(callTool(t, bob, "scan", map[string]any{"needles": []string{canary, aliceToken}}))
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("scan: %v: %s", err, out)
			}
			t.Logf("hostile worker saw %d processes, read %d environments", len(rep.Pids), rep.EnvironReadable)
			for _, f := range rep.Found {
				t.Errorf("the hostile worker found a secret: %s (needle0: gemgate's exchange secret, needle1: alice's token)", f)
			}
			where := rep.JWTs[victim.SHA256]
			inEnv := false
			for _, w := range where {
				if !strings.HasSuffix(w, "/mem") {
					inEnv = true
				}
			}
			switch {
			case tc.control:
				if !inEnv {
					t.Fatalf("control: the scan did not find alice's credential in her worker's environment; the attack test is blind (saw %v)", where)
				}
			case tc.sandboxed && len(where) > 0:
				t.Errorf("the sandboxed hostile worker read alice's credential at %v", where)
			case inEnv:
				t.Errorf("alice's credential is readable in %v; it should travel on a descriptor", where)
			case len(where) > 0:
				t.Logf("not isolated without a sandbox, as documented: same-account worker memory (%v)", where)
			}
			if tc.sandboxed && len(rep.Pids) > 2 {
				t.Errorf("the sandboxed worker sees %d other processes (%v); want only its sandbox's init", len(rep.Pids), rep.Pids)
			}
		})
	}
}

// marked lists the live processes whose command line contains mark.
func marked(mark string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(mark)) {
			if pid, err := strconv.Atoi(e.Name()); err == nil && alive(pid) {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// waitMarked waits until the number of processes marked with mark is (want > 0) or is not
// (want == 0) nonzero.
func waitMarked(t *testing.T, mark string, present bool, what string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := marked(mark)
		if (len(got) > 0) == present {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: processes marked %s: %v", what, mark, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAttackEscapedDescendantDies: a worker double-forks a sleeper into a session of its own;
// once the worker ends (its session closed, then worker_idle_timeout), and at gemgate's
// shutdown, no such process is left.
func TestAttackEscapedDescendantDies(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("the worker isolation attack tests need root (worker_user); CI runs as root")
	}
	bin, dir := hostileWorker(t)
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"default", nil},
		{"no sandbox", []string{"--worker-sandbox", "none", "--worker-user", "nobody"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The worker outlives its last session by worker_idle_timeout (worker_per: user).
			g := startDev(t, append([]string{"--worker-command", bin, "--data-dir", dir, "--worker-idle-timeout", "1s"}, tc.flags...)...)
			mark := "escapee-" + randomSecret(t)[:12]
			cs := connect(t, g.URL, g.Tokens["alice"], nil)
			callTool(t, cs, "daemonize", map[string]any{"mark": mark + "-a"})
			waitMarked(t, mark+"-a", true, "the worker's escaped sleeper never started")
			cs.Close() // DELETE: the session ends, and its worker a second later
			waitMarked(t, mark+"-a", false, "a descendant outlived its worker")

			cs2 := connect(t, g.URL, g.Tokens["alice"], nil)
			callTool(t, cs2, "daemonize", map[string]any{"mark": mark + "-b"})
			waitMarked(t, mark+"-b", true, "the second escaped sleeper never started")
			g.stop(t)
			waitMarked(t, mark+"-b", false, "a descendant outlived gemgate's shutdown")
		})
	}
}

// TestAttackWorkerThatStopsReading: a worker that stops reading its stdin after the handshake
// and a request larger than the pipe: the call is answered with an error carrying its id
// within worker_write_timeout, the worker is stopped, and the stop is logged and counted.
func TestAttackWorkerThatStopsReading(t *testing.T) {
	t.Parallel()
	bin, dir := hostileWorker(t)
	g := startDev(t, "--worker-command", bin+" deaf", "--data-dir", dir, "--worker-write-timeout", "1s",
		"--metrics-listen", "127.0.0.1:0")
	s := ltOpen(t, g, g.Tokens["alice"], nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	big := strings.Repeat("x", 1<<20)
	m, _, _, err := s.call(ctx, "big-1", "tools/call", map[string]any{"name": "scan", "arguments": map[string]any{"pad": big}})
	if err != nil {
		t.Fatalf("the call to a worker that does not read: %v (after %v)", err, time.Since(start))
	}
	if string(m.ID) != `"big-1"` || m.Error == nil {
		t.Fatalf("want a JSON-RPC error with id \"big-1\", got id %s error %v", m.ID, m.Error)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the call took %v with worker_write_timeout 1s", d)
	}
	ltWaitLog(t, g, "worker stopped reading its stdin", 10*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for ltMetrics(t, g)[`gemgate_worker_exits_total{result="hung"}`] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("gemgate_worker_exits_total{result=\"hung\"} never reached 1: %v", ltMetrics(t, g))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAttackInvalidUTF8NeverReachesClient: the worker answers with invalid UTF-8 in a string;
// the client receives valid UTF-8 (U+FFFD in its place), and gemgate logs it once.
func TestAttackInvalidUTF8NeverReachesClient(t *testing.T) {
	t.Parallel()
	bin, dir := hostileWorker(t)
	g := startDev(t, "--worker-command", bin, "--data-dir", dir)
	s := ltOpen(t, g, g.Tokens["alice"], nil)
	for i := range 2 {
		body := map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": map[string]any{"name": "badutf8"}}
		resp, err := s.post(context.Background(), body, "application/json")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !utf8.Valid(b) || !strings.Contains(string(b), "caf\uFFFD \uFFFD ok") {
			t.Fatalf("answer %d: status %d, valid UTF-8 %v: %q", i, resp.StatusCode, utf8.Valid(b), b)
		}
	}
	// gemgate's log reaches the harness through a pipe, behind the answers: wait for the line.
	ltWaitLog(t, g, "worker wrote invalid UTF-8", 10*time.Second)
	if n := strings.Count(g.logs.String(), "worker wrote invalid UTF-8"); n != 1 {
		t.Errorf("logged invalid UTF-8 %d times for one worker, want once", n)
	}
}

// startServeAsNobody runs a copy of gemgate serve as the account nobody, like the harness's
// startServe, and returns the MCP URL it logged. It is stopped with SIGTERM at cleanup.
func startServeAsNobody(t *testing.T, dir string, env []string, flags ...string) (url string, logs *logBuffer) {
	t.Helper()
	bin := filepath.Join(dir, "gemgate")
	b, err := os.ReadFile(gemgateBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--log-format", "json", "--log-level", "debug", "--drain-delay", "0s"}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs = &logBuffer{}
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			logs.add(sc.Text())
			var ev struct{ Msg, MCP string }
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Msg == "gemgate serving" {
				ready <- ev.MCP
			}
		}
		done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("gemgate (as nobody) did not stop within 30s of SIGTERM")
		}
	})
	select {
	case url = <-ready:
		return url, logs
	case err := <-done:
		t.Fatalf("gemgate as nobody exited early: %v\nlogs:\n%s", err, logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("gemgate as nobody not ready in time\nlogs:\n%s", logs)
	}
	return "", nil
}

// TestAttackSameAccountCannotReadGemgate: gemgate and its workers share one unprivileged
// account and no sandbox, the weakest setup. gemgate is non-dumpable, so the hostile worker,
// with every right of that account, reads neither gemgate's environment (the exchange client
// secret) nor its memory (the secret again, and the client's bearer token).
func TestAttackSameAccountCannotReadGemgate(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("this test starts gemgate as the account nobody, which needs root; CI runs as root")
	}
	bin, dir := hostileWorker(t)
	const resource = "urn:gemgate:attack-same-uid"
	iss, canary := canaryIssuer(t, resource)
	url, logs := startServeAsNobody(t, dir, []string{"GEMGATE_EXCHANGE_CLIENT_SECRET=" + canary},
		"--issuer", iss.URL(), "--audiences", resource, "--worker", "command", "--worker-command", bin,
		"--worker-credential", "exchange", "--exchange-client-id", "gemgate", "--exchange-audience", "backend",
		"--data-dir", dir, "--worker-sandbox", "none")
	if !strings.Contains(logs.String(), "worker sandbox: none") {
		t.Fatalf("want workers unconfined for this test\nlogs:\n%s", logs)
	}
	token, err := iss.Mint("mallory", []string{"mcp:use", "mcp:write"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, url, token, nil)
	var self credReport
	json.Unmarshal([]byte(text(callTool(t, cs, "credential", nil))), &self)
	if self.UID != 65534 {
		t.Fatalf("the worker runs as uid %d, want gemgate's own 65534", self.UID)
	}
	var rep scanReport
	out := text(callTool(t, cs, "scan", map[string]any{"needles": []string{canary, token}}))
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("scan: %v: %s", err, out)
	}
	t.Logf("hostile worker saw %d processes, read %d environments", len(rep.Pids), rep.EnvironReadable)
	for _, f := range rep.Found {
		t.Errorf("a worker of gemgate's own account found a secret: %s (needle0: the exchange client secret, needle1: the bearer token)", f)
	}
}

// canaryIssuer is a development issuer for resource whose client "gemgate" (token exchange
// to "backend") has a fresh random secret: the canary the attacks must not find.
func canaryIssuer(t *testing.T, resource string) (*devissuer.Issuer, string) {
	t.Helper()
	canary := "exchange-secret-canary-" + randomSecret(t)
	iss, err := devissuer.Start(devissuer.Options{
		Audience: resource, ExchangeAudiences: []string{"backend"},
		Clients: []devissuer.Client{{ID: "gemgate", Secret: canary, User: "gemgate", Scopes: []string{"mcp:use"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { iss.Close() })
	return iss, canary
}
