package test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// `gemgate dev --tls` writes a self-signed loopback certificate under certs/ (the key 0600),
// serves HTTPS with it, and a client that trusts it reaches the tools; plain HTTP is refused.
func TestDevServesTLSWithItsOwnCertificate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g := startDevIn(t, dir, "--tls")
	if !strings.HasPrefix(g.URL, "https://127.0.0.1:") {
		t.Fatalf("URL = %s, want https on loopback", g.URL)
	}
	certPEM, err := os.ReadFile(filepath.Join(dir, "certs", "dev-cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "certs", "dev-key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("dev key: %v, mode %v, want 0600", err, fi.Mode().Perm())
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		t.Fatal("the dev certificate does not parse")
	}
	base := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	client := mcp.NewClient(&mcp.Implementation{Name: "tls-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.URL,
		HTTPClient: &http.Client{Transport: bearerTransport{token: g.Tokens["alice"], base: base}}}, nil)
	if err != nil {
		t.Fatalf("connect over TLS: %v", err)
	}
	defer cs.Close()
	if got := text(callTool(t, cs, "whoami", nil)); !strings.Contains(got, "user=alice") {
		t.Errorf("whoami over TLS = %q", got)
	}
	// The metadata names the https resource.
	resp, err := (&http.Client{Transport: base}).Get(g.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(g.Metadata, "https://") {
		t.Errorf("metadata %s: %d", g.Metadata, resp.StatusCode)
	}
	// Plain HTTP to the TLS port gets no MCP answer.
	plain := strings.Replace(g.URL, "https://", "http://", 1)
	if resp, err := http.Post(plain, "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS listener: %d", resp.StatusCode)
		}
	}
}
