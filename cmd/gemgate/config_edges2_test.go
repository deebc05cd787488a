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
	c := mustLoad(t, unsandboxed("--listen", "127.0.0.1:0", "--metrics-listen", "off", "--issuer", "http://"+rst.Addr().String()+"/realms/resetting",
		"--worker", "command", "--worker-command", "true", "--log-format", "json")...)
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
	c, err := load("serve", []string{"--config", file})
	if err == nil {
		t.Errorf("a key written as the alias *listen (its YAML value is %q) set listen=%q", c.PublicURL, c.Listen)
	}
}

// No setting holds a line break. A block scalar's last one (| or >, which Helm's toYaml writes
// for a long value) is YAML's, not the value's: user_claim "preferred_username\n" would pass
// load and validate, and then refuse every token for a claim nobody has. Any other line break
// is refused.
func TestConfigFileLineBreakIsRefused(t *testing.T) {
	for body, want := range map[string]string{
		"user_claim: |\n  preferred_username\n":        "preferred_username",
		"user_claim: >\n  preferred_username\n":        "preferred_username",
		"user_claim: |\n  preferred_username\n  sub\n": "",
		"user_claim: |+\n  preferred_username\n\n":     "",
		"user_claim: \"preferred_username\\nsub\"\n":   "",
	} {
		file := writeFile(t, "gemgate.yaml", "issuer: https://id.example/realms/t\n"+body)
		c, err := load("serve", []string{"--config", file})
		switch {
		case want == "" && err == nil:
			t.Errorf("%q: a line break was taken: user_claim %q", body, c.UserClaim)
		case want == "" && !strings.Contains(err.Error(), "holds a line break"):
			t.Errorf("%q: refused for another reason: %v", body, err)
		case want != "" && err != nil:
			t.Errorf("%q: refused: %v", body, err)
		case want != "" && c.UserClaim != want:
			t.Errorf("%q: user_claim %q, want %q", body, c.UserClaim, want)
		}
	}
}
