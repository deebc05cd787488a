package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/internal/freeport"
)

// runDev runs gemgate dev --json in this process until the test ends, and returns what it
// printed once ready.
func runDev(t *testing.T, args ...string) devInfo {
	t.Helper()
	info, err := startDev(t, args...)
	if err != nil {
		t.Fatalf("dev: %v", err)
	}
	return info
}

// startDev is runDev that returns the error of a dev that ended before it was ready.
func startDev(t *testing.T, args ...string) (devInfo, error) {
	t.Helper()
	var info devInfo
	_, err := startJSONCommand(t, "dev", devCommand, append([]string{"--json", "--log-level", "warn"}, args...), &info)
	return info, err
}

// runJSONCommand runs a gemgate command in this process until the test ends, and decodes
// into out the one JSON line it prints once ready; the command must then stop, with no
// error, when the test ends.
func runJSONCommand(t *testing.T, name string, command func(context.Context, []string, io.Writer, io.Writer) error, args []string, out any) {
	t.Helper()
	if _, err := startJSONCommand(t, name, command, args, out); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// startJSONCommand is runJSONCommand that returns the error of a command that ended before
// it printed its line (a configuration it refused, say), for the test to judge, and the
// command's log.
func startJSONCommand(t *testing.T, name string, command func(context.Context, []string, io.Writer, io.Writer) error, args []string, out any) (*syncBuffer, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	done := make(chan error, 1)
	logs := &syncBuffer{}
	go func() {
		err := command(ctx, args, w, logs)
		w.CloseWithError(io.EOF)
		done <- err
	}()
	ended := false // the command's end was already taken from done
	t.Cleanup(func() {
		cancel()
		go io.Copy(io.Discard, r)
		if ended {
			return
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not stop", name)
		}
	})
	line := make(chan []byte, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		sc.Scan()
		line <- sc.Bytes()
	}()
	select {
	case b := <-line:
		if len(b) == 0 {
			// Nothing printed: the pipe closed because the command ended.
			ended = true
			if err := <-done; err != nil {
				return logs, err
			}
			t.Fatalf("%s ended without printing, and without an error\nlogs:\n%s", name, logs)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s printed %q: %v\nlogs:\n%s", name, b, err, logs)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s not ready\nlogs:\n%s", name, logs)
	}
	return logs, nil
}

// freeAddr is a loopback address nothing listens on right now (internal/freeport).
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// A token printed by one run of gemgate dev is still accepted after a restart with the same
// data directory: same issuer URL, same key, same client secrets.
//
// The address must stay the same across the restart (it is the issuer URL), and it is free
// only while nothing else takes it: freeAddr's port lies below the ephemeral range, out of
// the way of other connections and ":0" listeners, but another process may still bind it
// in the gap. When either start is refused because the address is in use, the test starts
// over on another address, a few times at most; any other failure is a failure.
func TestDevTokensOutliveARestart(t *testing.T) {
	var data string
	var first, second devInfo
	for attempt := 1; ; attempt++ {
		data = t.TempDir()
		args := []string{"--listen", freeAddr(t), "--data-dir", data, "--metrics-listen", "off"}
		var err error
		t.Run("first start", func(t *testing.T) { first, err = startDev(t, args...) })
		if err == nil {
			second, err = startDev(t, args...)
		}
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "is already in use") || attempt == 5 {
			t.Fatalf("dev: %v", err)
		}
		t.Logf("attempt %d: %v; starting over on another address", attempt, err)
	}
	if first.Issuer == "" || second.Issuer != first.Issuer {
		t.Fatalf("issuer changed across a restart: %q then %q", first.Issuer, second.Issuer)
	}
	if first.Clients[0].Secret != second.Clients[0].Secret {
		t.Errorf("client secret of %s changed across a restart", first.Clients[0].ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := auth.NewVerifier(ctx, auth.Config{Issuer: second.Issuer, Audiences: []string{second.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := v.Verify(ctx, first.Tokens["alice"]); err != nil || p.Subject != "alice" {
		t.Errorf("alice's token from before the restart: %v %+v", err, p)
	}
	if fi, err := os.Stat(filepath.Join(data, devStateDir)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("issuer state folder: %v, want mode 0700", err)
	}
}

// dev serves metrics by default (on 127.0.0.1:9464, or a free port when that is taken) and
// names the URL; the metadata's resource is exactly the URL it prints.
func TestDevMetricsAndResource(t *testing.T) {
	// Keep 9464 busy. Another package's test may hold it for a moment (a gemgate dev of its
	// own), and let it go just before dev looks: wait until this test holds it. Only a holder
	// that keeps it all along leaves the port unheld here, and then it is busy all the same.
	held := false
	for deadline := time.Now().Add(15 * time.Second); !held && time.Now().Before(deadline); {
		if ln, err := net.Listen("tcp", defaults().MetricsListen); err == nil {
			t.Cleanup(func() { ln.Close() })
			held = true
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !held {
		t.Logf("%s stayed held by another process for 15 s; it is taken all the same", defaults().MetricsListen)
	}
	info := runDev(t, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	if !strings.HasPrefix(info.Metrics, "http://127.0.0.1:") || strings.Contains(info.Metrics, ":9464/") {
		t.Fatalf("metrics = %q, want a free loopback port", info.Metrics)
	}
	resp, err := http.Get(info.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("metrics: %s", resp.Status)
	}
	var meta struct {
		Resource string `json:"resource"`
	}
	resp, err = http.Get(info.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil {
		t.Fatal(err)
	}
	if meta.Resource != info.URL || !strings.HasPrefix(info.URL, "http://127.0.0.1:") {
		t.Errorf("metadata resource %q, printed URL %q: want the same, spelled 127.0.0.1", meta.Resource, info.URL)
	}
}

// gemgate dev keeps a metrics address the user chose, busy or not: it does not start. (Its
// default address gives way to a free port when busy: TestDevMetricsAndResource.)
func TestDevMetricsListenKeepsAChosenAddress(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	c, err := load("dev", unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--metrics-listen", busy.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv, err := build(t.Context(), c, ln, slog.New(slog.DiscardHandler))
	if err == nil {
		srv.gw.Close()
		srv.metricsLn.Close()
		t.Fatalf("a busy address the user chose was given up for %s", srv.metricsLn.Addr())
	}
	if !strings.Contains(err.Error(), "metrics_listen: ") {
		t.Errorf("build: %v, want the metrics_listen error", err)
	}
}

// dev --tls makes a development CA and a loopback certificate it signs; both are reused,
// a client trusting only the CA connects, and the CA cannot vouch for any other name.
func TestDevCertificateIsSignedByADevCA(t *testing.T) {
	dir := t.TempDir()
	p, err := devCertificate(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{p.CAKey, p.Key} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want mode 0600", f, err)
		}
	}
	caPEM, _ := os.ReadFile(p.CA)
	certPEM, _ := os.ReadFile(p.Cert)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("the CA does not parse")
	}
	pair, err := tls.LoadX509KeyPair(p.Cert, p.Key)
	if err != nil {
		t.Fatal(err)
	}
	leaf := pair.Leaf
	for _, name := range []string{"127.0.0.1", "localhost", "::1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if leaf.IsCA {
		t.Error("the server certificate is a CA")
	}
	ca, _ := x509.ParseCertificate(mustPEM(t, caPEM))
	if !ca.IsCA || !ca.PermittedDNSDomainsCritical || len(ca.PermittedIPRanges) == 0 {
		t.Errorf("the CA is not limited to loopback names: %+v", ca.PermittedDNSDomains)
	}

	again, err := devCertificate(dir)
	if err != nil {
		t.Fatal(err)
	}
	caPEM2, _ := os.ReadFile(again.CA)
	certPEM2, _ := os.ReadFile(again.Cert)
	if string(caPEM2) != string(caPEM) || string(certPEM2) != string(certPEM) {
		t.Error("a second run made new files instead of reusing valid ones")
	}
	// A lost server key means a new server certificate from the same CA.
	os.Remove(p.Key)
	if _, err := devCertificate(dir); err != nil {
		t.Fatal(err)
	}
	caPEM3, _ := os.ReadFile(p.CA)
	certPEM3, _ := os.ReadFile(p.Cert)
	if string(caPEM3) != string(caPEM) || string(certPEM3) == string(certPEM) {
		t.Error("want the same CA and a new server certificate")
	}
}

func mustPEM(t *testing.T, b []byte) []byte {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("not PEM")
	}
	return blk.Bytes
}
