package main

// More edges of the configuration and of /readyz: each test failed on the rule before it.

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// quietLog tells causes apart by the error's full text. A fetch error that names the
// connection ("read tcp 127.0.0.1:41234->10.0.0.5:443: read: connection reset by peer", or a
// DNS timeout "read udp ...:53712->...:53: i/o timeout") is new text at every retry, and
// /readyz nudges a retry every second: the same cause, an issuer behind a proxy that resets
// connections, is logged about once a second for as long as anyone polls /readyz, not once
// a minute.
func TestReadyzSameCauseWithEphemeralPortIsQuiet(t *testing.T) {
	rst, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer rst.Close()
	var resets atomic.Int32
	go func() {
		for {
			conn, err := rst.Accept()
			if err != nil {
				return
			}
			resets.Add(1)
			conn.(*net.TCPConn).SetLinger(0) // close with RST
			conn.Close()
		}
	}()
	c := mustLoad(t, "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--issuer", "http://"+rst.Addr().String()+"/realms/resetting",
		"--worker", "command", "--worker-command", "true", "--log-format", "json")
	if errs := c.validate(); len(errs) > 0 {
		t.Fatal(errs)
	}
	srv, logs := buildLoggedServer(t, c)
	// A monitoring probe (or anyone) polls /readyz until gemgate has met eight resets, each an
	// error naming another ephemeral port.
	deadline := time.Now().Add(30 * time.Second)
	for ; resets.Load() < 8; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d fetches of the keys in 30s", resets.Load())
		}
		rec := httptest.NewRecorder()
		srv.gw.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/readyz", nil))
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("/readyz: %d, want 503 while the issuer resets connections", rec.Code)
		}
	}
	var lines []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"not ready`) {
			lines = append(lines, l)
		}
	}
	if len(lines) > 2 { // the first text ("not loaded yet" before an attempt ended) and one cause
		t.Errorf("one cause (the issuer resets connections) was logged %d times over %d resets, not once a minute:\n%s\n%s",
			len(lines), resets.Load(), lines[len(lines)-2], lines[len(lines)-1])
	}
}

// resolveAlias is applied to values but a key is read as root.Content[i].Value; for an
// alias node that is the anchor's name, not the aliased text. A key that YAML reads as
// "https://mcp.example/mcp" (unknown, refused) sets listen instead.
func TestConfigFileAliasKeyIsRefused(t *testing.T) {
	file := writeFile(t, "gemgate.yaml", "public_url: &listen https://mcp.example/mcp\n*listen : 0.0.0.0:9000\n")
	c, err := load("serve", []string{"--config", file}, false)
	if err == nil {
		t.Errorf("a key written as the alias *listen (its YAML value is %q) set listen=%q", c.PublicURL, c.Listen)
	}
}

// "Each value is taken as the text written": a block scalar (| or >) keeps YAML's trailing
// newline, and string settings without a pattern take it. user_claim "preferred_username\n"
// passes load and validate; every token is then refused at run time for a claim nobody has.
// (The same for exchange_client_id and exchange_audience; for issuer the message blames the
// scheme: `"https://id.example/realms/t\n" must be an https URL`.)
func TestConfigFileLineBreakIsRefused(t *testing.T) {
	file := writeFile(t, "gemgate.yaml", "issuer: https://id.example/realms/t\nuser_claim: |\n  preferred_username\n")
	c, err := load("serve", []string{"--config", file}, false)
	if err != nil {
		return
	}
	if errs := c.validate(); len(errs) == 0 && c.UserClaim != "preferred_username" {
		t.Errorf("user_claim written as a block scalar was taken as %q, and validate found no problem", c.UserClaim)
	}
}
