package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// With worker_credential: exchange, dev exchanges at its own issuer, and exchange_audience
// "defaults to gemstone" (docs/configuration.md, gemgate dev): one set to another backend is
// the audience the development issuer exchanges for, so that a worker starts with it.
func TestDevExchangesForTheExchangeAudienceSet(t *testing.T) {
	info := runDev(t, unsandboxed("--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--metrics-listen", "off",
		"--worker-credential", "exchange", "--exchange-audience", "backend")...)
	req, _ := http.NewRequest(http.MethodPost, info.URL, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+info.Tokens["alice"])
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize with exchange_audience backend: %s %s", resp.Status, b)
	}
}
