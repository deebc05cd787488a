package test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth/devissuer"
	"github.com/gemgate/gemgate/worker/demo"
)

// gemgate starts while its identity provider is down (compose and Kubernetes start things
// in any order): /readyz says why it is not ready, requests with a token get 503 with
// Retry-After rather than 401, and once the issuer comes up tokens verify, with no restart.
func TestStartsWhileIssuerIsDown(t *testing.T) {
	t.Parallel()
	issuerAddr := freeAddr(t) // nobody listens there until the issuer starts below

	g := startServe(t, "--issuer", "http://"+issuerAddr, "--worker", "command", "--worker-command", workerBin+" worker demo",
		"--read-only-tools", strings.Join(demo.ReadOnlyTools, ","))
	base := strings.TrimSuffix(g.URL, "/mcp")

	status, body := startupGet(t, base+"/readyz")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "issuer") {
		t.Fatalf("/readyz with the issuer down: %d %q, want 503 naming the issuer", status, body)
	}

	// Any well-formed token: its signature cannot be judged yet.
	tok := "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.e30.c2lnbmF0dXJl"
	resp := startupInitialize(t, g.URL, tok)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("POST /mcp with a token before the keys: %s, Retry-After %q; want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"))
	}
	if resp := startupInitialize(t, g.URL, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /mcp without a token: %s, want 401", resp.Status)
	}

	iss, err := devissuer.Start(devissuer.Options{Addr: issuerAddr, Audience: g.URL})
	if err != nil {
		t.Fatalf("starting the issuer on %s: %v", issuerAddr, err)
	}
	t.Cleanup(func() { iss.Close() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, body = startupGet(t, base+"/readyz")
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d %q a minute after the issuer came up\nlogs:\n%s", status, body, g.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	good, err := iss.Mint("alice", []string{"mcp:use", "mcp:write"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, g.URL, good, nil)
	if out := text(callTool(t, cs, "whoami", nil)); !strings.Contains(out, "alice") {
		t.Errorf("whoami = %q, want alice", out)
	}
}

func startupGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b)
}

// startupInitialize posts an initialize request with token ("" for none) and returns the
// answer with its body read.
func startupInitialize(t *testing.T, url, token string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp
}
