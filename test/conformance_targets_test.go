package test

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// confWorker is one everything-server build that gemgate runs as its stdio worker.
type confWorker struct {
	Name    string // "sessionless" or "legacy", as in known-gaps.txt
	About   string // what it is, for the summary
	Modfile string // the module that pins it, relative to test/: "" is gemgate's own go.mod
	Bin     string
}

// confEverythingPkg is the go-sdk conformance server, a `tool` in both modules.
const confEverythingPkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// confWorkers builds both workers: (a) the everything-server of the go-sdk that gemgate's
// go.mod pins (v1.8.0), which speaks 2026-07-28 and 2025-11-25 over stdio, and (b) gemgate's
// legacy test worker (test/conformance/legacyserver): that of go-sdk v1.6.1, which speaks
// 2025-11-25 and older only, with the 2026-07-28 suite's diagnostic tools written the legacy
// way: the kind of worker gemgate must bridge for a 2026-07-28 client.
func confWorkers(t *testing.T) []*confWorker {
	t.Helper()
	ws := []*confWorker{
		{Name: "sessionless", About: "go-sdk v1.8.0 conformance/everything-server (2026-07-28 and 2025-11-25)"},
		{Name: "legacy", About: "go-sdk v1.6.1 conformance/everything-server with the 2026-07-28 suite's diagnostic tools, the legacy way (2025-11-25 only)", Modfile: "conformance/legacyserver"},
	}
	for _, w := range ws {
		w.Bin = filepath.Join(t.TempDir(), w.Name+"-everything-server")
		if w.Modfile != "" {
			buildLegacyWorker(t, w.Modfile, w.Bin)
			continue
		}
		if out, err := exec.Command("go", "build", "-o", w.Bin, confEverythingPkg).CombinedOutput(); err != nil {
			t.Fatalf("building the %s everything-server: %v\n%s", w.Name, err, out)
		}
	}
	return ws
}

// buildLegacyWorker builds gemgate's legacy test worker into bin: go-sdk v1.6.1's
// everything-server, as the module in dir pins it, and dir's diagnostics.go, as one package.
// The server's source is not copied into gemgate: its main.go, read from the module cache,
// joins dir through a build overlay with one line added (registerDiagnostics after its
// prompts), and the build fails if that anchor is no longer there.
func buildLegacyWorker(t *testing.T, dir, bin string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-C", dir, "-f", "{{.Dir}}", confEverythingPkg).CombinedOutput()
	if err != nil {
		t.Fatalf("finding go-sdk v1.6.1's everything-server: %v\n%s", err, out)
	}
	upstream, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	const anchor = "\tregisterPrompts(server)\n"
	if strings.Count(string(upstream), anchor) != 1 {
		t.Fatalf("go-sdk v1.6.1's everything-server: want exactly one %q to add the diagnostic tools after", anchor)
	}
	tmp := t.TempDir()
	patched := filepath.Join(tmp, "main.go")
	main := strings.Replace(string(upstream), anchor, anchor+"\tregisterDiagnostics(server)\n", 1)
	if err := os.WriteFile(patched, []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	target, err := filepath.Abs(filepath.Join(dir, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {target: patched}})
	if err != nil {
		t.Fatal(err)
	}
	ov := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	// -C must come first.
	build := exec.Command("go", "build", "-C", dir, "-overlay", ov, "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the legacy test worker: %v\n%s", err, out)
	}
}

// confStartEverything runs the go-sdk v1.8.0 everything-server in its own streamable HTTP mode on
// a free loopback port until the test ends, and returns its address once it accepts
// connections. stateless picks the mode that the requirement set's reference runs in.
func confStartEverything(t *testing.T, server string, stateless bool) string {
	t.Helper()
	addr := freeAddr(t)
	var logs bytes.Buffer
	mode := "-stateless=false"
	if stateless {
		mode = "-stateless=true"
	}
	cmd := exec.Command(server, "-http", addr, mode)
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

// confGated is one gemgate with a worker, behind the token-injecting proxy.
type confGated struct {
	Worker *confWorker
	G      *gemgate
	URL    string // the proxy's MCP URL, on localhost
	Token  string
}

// confStartGated starts gemgate dev with w as the stdio worker and the proxy in front of it.
// Every scenario opens a session or sends requests as alice, one after another: no per-user
// cap or rate.
func confStartGated(t *testing.T, w *confWorker) *confGated {
	t.Helper()
	g := startDev(t, "--worker", "command", "--worker-command", w.Bin, "--max-sessions-per-user", "0", "--worker-start-rate", "0")
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
	return &confGated{Worker: w, G: g, URL: "http://" + confLocalhost(t, proxy) + u.Path, Token: token}
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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// When a response's header goes out, net/http's HTTP/1.1 server reads what is left of
		// the request body and closes it, unless full duplex is on. The transport may still be
		// forwarding that body (its last Read, the one that returns EOF): the Read on the
		// closed body ("invalid Read on closed Body") makes it drop the connection to gemgate,
		// and a listen stream ends right after its acknowledgement. Seen in loaded runs.
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}
