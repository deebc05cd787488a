package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// net/http logs every failed TLS handshake through the server's ErrorLog, and Go's TLS server
// quotes the client's ALPN protocol names whole in that line ("tls: client requested
// unsupported application protocols (...)"). A client that never authenticates, sending
// some 50 KB of protocol names per connection, gets each of its handshakes logged at warn as
// one line clipped to its first KiB (its JSON line well under 8 KiB), with what was cut
// counted ("...(+N more)"), never a line of its own text tens of kilobytes long.
func TestTLSHandshakeErrorLogLineIsBounded(t *testing.T) {
	certs, err := devCertificate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done, exited := make(chan error, 1), make(chan struct{})
	go func() {
		done <- serveCommand(ctx, unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off",
			"--worker", "command", "--worker-command", "true", "--log-format", "json", "--drain-delay", "0",
			"--tls-cert", certs.Cert, "--tls-key", certs.Key), &bytes.Buffer{}, logs)
		close(exited)
	}()
	t.Cleanup(func() { cancel(); <-exited })
	addr := waitLog(t, logs, done, "gemgate serving")["listen"]

	// About 50 KB of protocol names, none of them h2 or http/1.1.
	var protos []string
	for i := range 200 {
		protos = append(protos, fmt.Sprintf("p%03d-%s", i, strings.Repeat("\x01", 240)))
	}
	const conns = 5
	for range conns {
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: protos})
		if err == nil {
			c.Close()
		}
	}
	// The server logs a handshake's error after its alert has reached the client, so the last
	// lines may come after the last Dial returned: wait for one clipped line per connection
	// (a loaded machine may delay them past any fixed wait), then read the log.
	clippedLines := func() int {
		n := 0
		for _, ev := range jsonLines(logs.String()) {
			if msg, _ := ev["msg"].(string); strings.Contains(msg, "TLS handshake error") && strings.HasSuffix(msg, " more)") && ev["level"] == "WARN" {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(10 * time.Second); clippedLines() < conns && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	const bound = 8 << 10
	long, biggest := 0, 0
	for _, l := range strings.Split(logs.String(), "\n") {
		if len(l) > bound {
			long++
			biggest = max(biggest, len(l))
		}
	}
	if long > 0 {
		t.Fatalf("%d unauthenticated TLS handshakes made %d log lines over %d bytes, the longest %d bytes", conns, long, bound, biggest)
	}
	if clipped := clippedLines(); clipped != conns {
		t.Errorf("%d TLS handshakes with 50 KB of protocol names: %d clipped WARN lines, want one each:\n%s", conns, clipped, logs)
	}
}

// jsonLines decodes the JSON log lines of logs.
func jsonLines(logs string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(logs, "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil {
			out = append(out, ev)
		}
	}
	return out
}
