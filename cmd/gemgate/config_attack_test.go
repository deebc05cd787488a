package main

// Attacks on, and operators' slips in, the configuration, the command line, TLS serving, the
// listeners, the metrics endpoint and shutdown. Each test failed on the code before its fix.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth/devissuer"
	"github.com/gemgate/gemgate/auth/exchange"
)

// mustLoad loads a serve configuration from args or fails the test.
func mustLoad(t *testing.T, args ...string) *Config {
	t.Helper()
	c, err := load("serve", args)
	if err != nil {
		t.Fatalf("load %v: %v", args, err)
	}
	return c
}

// buildServer builds the server of c on a loopback listener, closed when the test ends.
func buildServer(t *testing.T, c *Config) *server {
	t.Helper()
	srv, _ := buildLoggedServer(t, c)
	return srv
}

// buildLoggedServer is buildServer, its log (in c's format) kept.
func buildLoggedServer(t *testing.T, c *Config) (*server, *syncBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log, err := newLogger(c, logs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := build(ctx, c, ln, log)
	if err != nil {
		cancel()
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if srv.metrics != nil {
			srv.metrics.Close()
		}
		srv.gw.Close()
		ln.Close()
	})
	return srv, logs
}

// serveInBackground runs gemgate serve with a worker that is never started, JSON logs and no
// drain, plus args, until the test ends; it returns the address it listens on.
func serveInBackground(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done, exited := make(chan error, 1), make(chan struct{})
	go func() {
		done <- serveCommand(ctx, append(unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off",
			"--worker", "command", "--worker-command", "true", "--log-format", "json", "--drain-delay", "0"), args...), &bytes.Buffer{}, logs)
		close(exited)
	}()
	// Not <-done: waitLog takes serve's error when it ends early, and the test fails then.
	t.Cleanup(func() { cancel(); <-exited })
	return waitLog(t, logs, done, "gemgate serving")["listen"]
}

// The issuer must be https off loopback, because its keys decide who is who. jwks_url, which
// replaces discovery as the place the keys come from, is not checked at all: a plain-HTTP
// keys URL on another host is accepted, and anyone on the path can hand gemgate a key and
// mint tokens for any user.
func TestJWKSURLOverPlainHTTPIsRefused(t *testing.T) {
	c := mustLoad(t, "--listen", "0.0.0.0:8080", "--public-url", "https://gw.example/mcp",
		"--issuer", "https://id.example/realms/team", "--jwks-url", "http://id.example/realms/team/certs")
	errs := c.validate()
	if !strings.Contains(configErrors(errs).Error(), "jwks_url") {
		t.Errorf("a plain-HTTP jwks_url on a non-loopback host was accepted (issuer must be https, its keys need not): validate() = %v", errs)
	}
}

// exchange_token_url receives gemgate's client secret and every caller's access token (RFC
// 8693 subject_token). Plain HTTP to another host is accepted, at validation and at build.
func TestExchangeTokenURLOverPlainHTTPIsRefused(t *testing.T) {
	t.Setenv("GEMGATE_EXCHANGE_CLIENT_SECRET", "s3cret")
	c := mustLoad(t, "--listen", "0.0.0.0:8080", "--public-url", "https://gw.example/mcp",
		"--issuer", "https://id.example/realms/team", "--worker", "command", "--worker-command", "my-server",
		"--read-only-tools", "list_*", "--worker-user", "nobody",
		"--worker-credential", "exchange", "--exchange-client-id", "gemgate", "--exchange-audience", "backend",
		"--exchange-token-url", "http://id.example/realms/team/protocol/openid-connect/token")
	errs := c.validate()
	_, buildErr := newLazyExchanger(c.Issuer, exchange.Config{TokenURL: c.ExchangeTokenURL, ClientID: c.ExchangeClientID,
		ClientSecret: c.ExchangeSecret, Audience: c.ExchangeAudience}, c.AllowInsecure)
	if !strings.Contains(configErrors(errs).Error(), "exchange_token_url") && buildErr == nil {
		t.Errorf("a plain-HTTP exchange_token_url on a non-loopback host was accepted: validate() = %v, newLazyExchanger error = %v", errs, buildErr)
	}
}

// auth=none is "only allowed on loopback", but the check looks at listen alone. A loopback
// listener behind a reverse proxy (public_url says the world reaches it as
// https://mcp.example.com, trusted_proxies names the proxy) is exactly the deployment where
// auth=none hands every Internet client the operator's own identity, and it validates.
func TestAuthNoneRefusedWhenServedToOthers(t *testing.T) {
	c := mustLoad(t, "--auth", "none", "--listen", "127.0.0.1:8080",
		"--public-url", "https://mcp.example.com/mcp", "--trusted-proxies", "127.0.0.1")
	if errs := c.validate(); len(errs) == 0 {
		t.Errorf("auth=none validated with public_url https://mcp.example.com/mcp and a trusted proxy: every client of the proxy acts as the local user")
	}
}

// With auth=none the Origin gate is the only thing between a web page and the local user's
// worker. allowed_origins: "*" turns it off, and the combination validates; any page the user
// visits can then call tools as the user (the request below, from https://evil.example, gets
// past the gate to the JSON-RPC parser instead of a 403).
func TestAuthNoneWithAnyOriginIsRefused(t *testing.T) {
	c := mustLoad(t, unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--allowed-origins", "*")...)
	errs := c.validate()
	srv := buildServer(t, c)
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader("not json"))
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	srv.gw.Handler().ServeHTTP(rec, req)
	if len(errs) == 0 {
		t.Errorf("auth=none with allowed_origins * validated; a POST from Origin https://evil.example got %d (past the Origin gate), not 403", rec.Code)
	}
}

// yaml.Unmarshal reads the first YAML document only. A file with a second document (two
// files concatenated, a preset and the site's own settings) has everything after "---"
// silently dropped: here a body limit and a required sandbox.
func TestConfigFileSecondDocumentIsNotIgnored(t *testing.T) {
	file := writeFile(t, "gemgate.yaml", "issuer: https://id.example/realms/team\n---\nmax_body_bytes: 1024\nworker_sandbox: bwrap\n")
	c, err := load("serve", []string{"--config", file})
	if err != nil {
		if !strings.Contains(err.Error(), "more than one YAML document") {
			t.Errorf("refused for another reason: %v", err)
		}
		return
	}
	if c.MaxBodyBytes != 1024 || c.WorkerSandbox != "bwrap" {
		t.Errorf("the second YAML document was silently ignored: max_body_bytes=%d worker_sandbox=%q (want 1024, bwrap, or an error)", c.MaxBodyBytes, c.WorkerSandbox)
	}
}

// A YAML null inside a list, or a mapping where a list or value belongs, is turned into text
// by fmt.Sprint ("<nil>", "map[...]") and taken as a setting instead of refused.
func TestConfigFileNullAndMappingValuesAreRefused(t *testing.T) {
	for _, body := range []string{
		"issuer: https://id.example\nrequired_scopes: [mcp:use, ~]\n",
		"issuer: https://id.example\naudiences: {https://gw.example/mcp: true}\n",
		"issuer: https://id.example\nworker: command\nworker_command: [my-server, null]\n",
		"issuer: {url: https://id.example}\n",
	} {
		file := writeFile(t, "gemgate.yaml", body)
		c, err := load("serve", []string{"--config", file})
		if err != nil {
			continue
		}
		if errs := c.validate(); len(errs) > 0 {
			continue
		}
		t.Errorf("%q was accepted: required_scopes=%q audiences=%q worker_command=%q issuer=%q", body, c.RequiredScopes, c.Audiences, c.WorkerCommand, c.Issuer)
	}
}

// An unknown key in the file is refused; an unknown GEMGATE_ variable (a typo in a compose
// file or a Helm value) is named in a warning at start and by gemgate check, so the default
// it leaves in force does not go unnoticed. It is not refused: GEMGATE_ names are also what
// gemgate hands its workers, and what tests and scripts read.
func TestUnknownGemgateEnvironmentVariableIsWarned(t *testing.T) {
	t.Setenv("GEMGATE_WORKER_SANDBOXX", "bwrap")
	t.Setenv("GEMGATE_REQUIRED_SCOPE", "team:mcp")
	t.Setenv("GEMGATE_READ_ONLY", "1") // a worker's, not a setting: no warning
	c := mustLoad(t, "--issuer", "https://id.example")
	var warned []string
	for _, w := range c.warnings() {
		warned = append(warned, w.what)
	}
	all := strings.Join(warned, "\n")
	for _, name := range []string{"GEMGATE_WORKER_SANDBOXX", "GEMGATE_REQUIRED_SCOPE"} {
		if !strings.Contains(all, "environment variable "+name+" is not a gemgate setting") {
			t.Errorf("no warning names %s; warnings:\n%s", name, all)
		}
	}
	if strings.Contains(all, "GEMGATE_READ_ONLY") || strings.Contains(all, "GEMGATE_ISSUER") {
		t.Errorf("a known name was warned about:\n%s", all)
	}
}

// The metrics listener (0.0.0.0:9464 in the Helm chart and the compose files) has no idle
// timeout, no read timeout and no connection cap: a keep-alive connection that made one
// request is held for ever, and each such connection takes a descriptor from the budget
// max_connections and max_sessions were sized from (docs: 64 reserved "for listeners, the
// metrics endpoint, ...").
func TestMetricsListenerBoundsIdleConnections(t *testing.T) {
	srv := buildServer(t, mustLoad(t, unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0")...))
	if srv.metrics.IdleTimeout <= 0 && srv.metrics.ReadTimeout <= 0 {
		t.Errorf("metrics server: IdleTimeout=%v ReadTimeout=%v: an idle keep-alive connection is never closed", srv.metrics.IdleTimeout, srv.metrics.ReadTimeout)
	}
	if _, capped := srv.metricsLn.(interface{ Open() int }); !capped {
		t.Errorf("metrics listener %T has no connection cap", srv.metricsLn)
	}
}

// writeTestCert writes a self-signed certificate for 127.0.0.1 with serial to certFile/keyFile.
func writeTestCert(t *testing.T, certFile, keyFile string, serial int64) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "review"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalPKCS8PrivateKey(key)
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tls_cert/tls_key are read once, at start. A renewed certificate (ACME, cert-manager, a
// 47-day CA lifetime) is never picked up: new handshakes keep getting the old one until it
// expires and every client fails, unless someone restarts gemgate.
func TestTLSCertificateRenewalIsPickedUp(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeTestCert(t, certFile, keyFile, 1)
	addr := serveInBackground(t, "--tls-cert", certFile, "--tls-key", keyFile)
	serial := func() int64 {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	if s := serial(); s != 1 {
		t.Fatalf("first certificate: serial %d", s)
	}
	writeTestCert(t, certFile, keyFile, 2) // the renewal lands
	deadline := time.Now().Add(3 * time.Second)
	for serial() != 2 {
		if time.Now().After(deadline) {
			t.Errorf("tls_cert was renewed on disk; new handshakes still get serial %d after 3s: the certificate is never reloaded", serial())
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The development issuer's signing key is taken from <data_dir>/.dev-issuer/key.pem whoever
// wrote it: a directory or key file that others can write is used as it is (the docs say
// the folder is mode 0700; MkdirAll does not change one that exists). With HOME unset or
// "/", data_dir defaults to a predictable /tmp/gemgate-demo-<uid>, where another local user
// can plant the directory and a key, then mint tokens the loopback gateway accepts.
func TestDevIssuerRefusesAKeyOthersCouldWrite(t *testing.T) {
	t.Setenv("HOME", "/")
	if d := defaultDataDir(); strings.HasPrefix(d, os.TempDir()) {
		t.Logf("with HOME=/ the default data_dir is the predictable %s", d)
	}
	dataDir := t.TempDir()
	stateDir := filepath.Join(dataDir, devStateDir)
	if err := os.Mkdir(stateDir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(stateDir, 0o777) // past the umask: as another user would leave it
	planted, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(planted)
	keyFile := filepath.Join(stateDir, "key.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(keyFile, 0o666)
	issuer, _, err := startKeptIssuer(dataDir, "", devissuer.Options{Addr: "127.0.0.1:0", Audience: "http://127.0.0.1:1/mcp", Clients: devClients(nil)})
	if err != nil {
		if !strings.Contains(err.Error(), "may be written by others") {
			t.Errorf("refused for another reason: %v", err)
		}
		return
	}
	defer issuer.Close()
	resp, err := http.Get(issuer.URL() + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	resp, err = http.Get(doc.JWKSURI)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	st, _ := os.Stat(stateDir)
	if strings.Contains(string(body), base64.RawURLEncoding.EncodeToString(planted.N.Bytes())) {
		t.Errorf("the development issuer signs with a key from a world-writable %s (mode %v, key.pem 0666): whoever planted it mints tokens the dev gateway accepts", stateDir, st.Mode().Perm())
	}
}

// signalHelperEnv makes the test binary run gemgate serve instead of the tests (see TestMain
// and TestSecondSignalStopsAtOnce).
const signalHelperEnv = "GEMGATE_TEST_SIGNAL_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(hardenHelperEnv) == "1" {
		os.Exit(hardenHelper())
	}
	if os.Getenv(signalHelperEnv) == "1" {
		os.Exit(run(unsandboxed("serve", "--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off",
			"--worker", "command", "--worker-command", "true", "--log-format", "json",
			"--drain-delay", "20s", "--shutdown-grace", "10s"), os.Stdout, os.Stderr))
	}
	// gemgate's demo worker is the binary itself run as "worker demo": under test, this one.
	if len(os.Args) == 3 && os.Args[1] == "worker" && os.Args[2] == "demo" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// signal.NotifyContext keeps catching SIGINT and SIGTERM after the first one: main never
// calls its stop, so a second Ctrl-C (or a supervisor's second SIGTERM) during the drain is
// swallowed, and gemgate cannot be interrupted for drain_delay + shutdown_grace + the
// workers' stop.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), signalHelperEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	waitFor := func(msg string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("helper ended before %q", msg)
				}
				if strings.Contains(l, `"msg":"`+msg) {
					return
				}
			case <-timeout:
				t.Fatalf("no %q from the helper", msg)
			}
		}
	}
	waitFor("gemgate serving")
	cmd.Process.Signal(syscall.SIGTERM)
	waitFor("draining")
	second := time.Now()
	cmd.Process.Signal(syscall.SIGINT) // the operator presses Ctrl-C: stop now
	go func() {
		for range lines {
		}
	}()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Errorf("a second signal during the 20s drain was ignored: the process was still running %v after it (killed now)", time.Since(second).Round(time.Second))
	}
}

// /readyz is unauthenticated and on the public listener. While the issuer is unreachable
// every request to it writes a WARN line ("not ready", with the fetch error): anyone who can
// reach the port drives the log at their request rate, burying the real events (the
// connection cap's own warning is limited to once a minute).
func TestReadyzDoesNotLetClientsFloodTheLog(t *testing.T) {
	c := mustLoad(t, unsandboxed("--listen", "127.0.0.1:0", "--metrics-listen", "off", "--issuer", "http://127.0.0.1:1/realms/down",
		"--worker", "command", "--worker-command", "true", "--log-format", "json")...)
	if errs := c.validate(); len(errs) > 0 {
		t.Fatal(errs)
	}
	srv, logs := buildLoggedServer(t, c)
	before := strings.Count(logs.String(), "\n")
	const requests = 200
	for range requests {
		rec := httptest.NewRecorder()
		srv.gw.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/readyz", nil))
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("/readyz: %d, want 503 while the issuer is down", rec.Code)
		}
	}
	lines := strings.Count(logs.String(), "\n") - before
	if lines > 10 {
		t.Errorf("%d unauthenticated GET /readyz wrote %d log lines (%d bytes): the log grows at the client's request rate", requests, lines, len(logs.String()))
	}
}

// max_connections is sized at 64 KiB of memory per connection (docs, "How the defaults are
// sized"), and no header gemgate reads is longer than a 16 KiB token. But the MCP server
// keeps net/http's default MaxHeaderBytes of 1 MiB: each connection may make gemgate hold
// a megabyte of header for read_timeout's header bound, sixteen times the budget, so the cap
// sized to a quarter of memory allows four times memory. A 512 KiB junk header is served.
func TestHeaderLimitFitsTheConnectionBudget(t *testing.T) {
	addr := serveInBackground(t)
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/healthz", nil)
	req.Header.Set("X-Pad", strings.Repeat("a", 512<<10))
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a request with a 512 KiB header got %d, not 431: the header limit is net/http's 1 MiB, against a budget of 64 KiB per connection", resp.StatusCode)
	}
}

// mcp_path is checked for a leading slash only. It is handed to chi as a route pattern, so
// "/mcp/*" and "/mcp path" validate and then panic in build (a stack trace, not the listed
// problems), "/{tenant}" validates and makes every top-level path the MCP endpoint, and
// "/healthz" validates and shadows the health check; "/mcp?x" ends up in the resource URL.
func TestMCPPathIsValidated(t *testing.T) {
	for _, p := range []string{"/mcp/*", "/mcp path", "/{tenant}", "/healthz", "/mcp?x"} {
		c := mustLoad(t, "--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--mcp-path", p)
		if strings.Contains(configErrors(c.validate()).Error(), "mcp_path") {
			continue
		}
		outcome := "serves"
		func() {
			defer func() {
				if v := recover(); v != nil {
					outcome = "panics in build: " + strings.SplitN(fmt.Sprint(v), "\n", 2)[0]
				}
			}()
			ln, err := net.Listen("tcp", c.Listen)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			srv, err := build(context.Background(), c, ln, slog.New(slog.DiscardHandler))
			if err != nil {
				outcome = "build error: " + err.Error()
				return
			}
			defer srv.gw.Close()
			for _, path := range []string{"/healthz", "/anything"} {
				rec := httptest.NewRecorder()
				srv.gw.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
				outcome += fmt.Sprintf(", GET %s %d", path, rec.Code)
			}
			outcome += ", resource " + srv.publicURL
		}()
		t.Errorf("mcp_path %q validated; the gateway %s", p, outcome)
	}
}
