package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
	"time"
)

// net/http logs every failed TLS handshake through the server's ErrorLog, which serve hands
// gemgate's own log at warn. Go's TLS server quotes the client's ALPN protocol names whole in
// its error ("tls: client requested unsupported application protocols (...)"): a client that
// never authenticates, opening connections in a loop, gets a log line of tens of kilobytes of
// its own text per connection, with no bound on the line and no rate limit (unlike /readyz's
// or the connection cap's lines, which anyone may provoke too and which gemgate logs at most
// once a minute).
func TestRev12TLSHandshakeErrorLogLineIsBounded(t *testing.T) {
	certs, err := devCertificate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done, exited := make(chan error, 1), make(chan struct{})
	go func() {
		done <- serveCommand(ctx, []string{"--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off",
			"--worker", "command", "--worker-command", "true", "--log-format", "json", "--drain-delay", "0",
			"--tls-cert", certs.Cert, "--tls-key", certs.Key}, &bytes.Buffer{}, logs)
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
	time.Sleep(300 * time.Millisecond)
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
}
