package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
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
	clipped := 0
	for _, ev := range jsonLines(logs.String()) {
		if msg, _ := ev["msg"].(string); strings.Contains(msg, "TLS handshake error") && strings.HasSuffix(msg, " more)") && ev["level"] == "WARN" {
			clipped++
		}
	}
	if clipped != conns {
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

func newTestHTTPErrorLog(t *testing.T) (*httpErrorLog, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	l, err := newLogger(&Config{LogLevel: "info", LogFormat: "json"}, logs)
	if err != nil {
		t.Fatal(err)
	}
	return newHTTPErrorLog(l), logs
}

// A line of net/http's that is neither long nor part of a flood is logged at once, at warn,
// as net/http wrote it.
func TestHTTPErrorLogPassesAnOrdinaryLineWhole(t *testing.T) {
	e, logs := newTestHTTPErrorLog(t)
	const line = "http: TLS handshake error from 192.0.2.7:50312: remote error: tls: bad certificate"
	e.logger().Print(line)
	evs := jsonLines(logs.String())
	if len(evs) != 1 || evs[0]["msg"] != line || evs[0]["level"] != "WARN" {
		t.Fatalf("one ordinary error line of net/http's logged as:\n%s\nwant one WARN line with msg %q", logs, line)
	}
}

// A line is clipped by its bytes before it is escaped: one of invalid UTF-8 and control
// bytes, which JSON writes six bytes each, still makes a JSON line under 8 KiB.
func TestHTTPErrorLogClipsUnprintableText(t *testing.T) {
	e, logs := newTestHTTPErrorLog(t)
	e.logger().Print("http: TLS handshake error from 192.0.2.7:50312: " + strings.Repeat("\xff\x01\u202e", 20000))
	out := logs.String()
	if len(out) > 8<<10 {
		t.Fatalf("a 100 KB line of unprintable bytes made %d bytes of log", len(out))
	}
	evs := jsonLines(out)
	if len(evs) != 1 {
		t.Fatalf("want one JSON line:\n%s", out)
	}
	if msg, _ := evs[0]["msg"].(string); !strings.HasPrefix(msg, "http: TLS handshake error from 192.0.2.7:50312: ") || !strings.HasSuffix(msg, " more)") {
		t.Errorf("clipped line %q: want its beginning and the count of what was cut", msg)
	}
}

// net/http's lines, from every connection of every server gemgate runs, share one limit:
// a flood is logged as its first httpErrorBurst lines, and the lines not logged are counted
// in a line of their own, written before the next line that is logged once the rate allows
// it again (a second later), which comes through whole.
func TestHTTPErrorLogLimitsAFloodAndCountsIt(t *testing.T) {
	e, logs := newTestHTTPErrorLog(t)
	e.reportAfter = time.Hour // the count comes with the next line logged
	const flood = 500
	var wg sync.WaitGroup
	for g := range 5 {
		wg.Go(func() {
			l := e.logger()
			for i := range flood / 5 {
				l.Printf("http: TLS handshake error from 192.0.2.%d:%d: EOF", g, 40000+i)
			}
		})
	}
	wg.Wait()
	logged := len(jsonLines(logs.String()))
	if logged < httpErrorBurst || logged > httpErrorBurst+2 {
		t.Fatalf("%d error lines at once: %d logged, want the burst of %d:\n%s", flood, logged, httpErrorBurst, logs)
	}
	time.Sleep(time.Second / httpErrorLines * 11 / 10)
	const line = "http: Accept error: accept tcp 127.0.0.1:8000: accept4: too many open files; retrying in 5ms"
	e.logger().Print(line)
	evs := jsonLines(logs.String())
	if len(evs) != logged+2 {
		t.Fatalf("after the flood, one line more: want it and the count of the lines not logged, got:\n%s", logs)
	}
	report, last := evs[logged], evs[logged+1]
	if report["msg"] != "HTTP server error log lines not logged: over the rate" || report["count"] != float64(flood-logged) {
		t.Errorf("report %v: want count %d", report, flood-logged)
	}
	if last["msg"] != line || last["level"] != "WARN" {
		t.Errorf("the line after the flood logged as %v, want msg %q", last, line)
	}
}

// When no line follows a flood, the count of the lines not logged is still written, once,
// shortly after the first of them (httpErrorReport); and when gemgate stops.
func TestHTTPErrorLogReportsAFloodWithNoLineAfterIt(t *testing.T) {
	e, logs := newTestHTTPErrorLog(t)
	e.reportAfter = 50 * time.Millisecond
	const flood = 100
	l := e.logger()
	for i := range flood {
		l.Printf("http: TLS handshake error from 192.0.2.1:%d: EOF", 40000+i)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		evs := jsonLines(logs.String())
		var counted, reports, logged float64
		for _, ev := range evs {
			if ev["msg"] == "HTTP server error log lines not logged: over the rate" {
				reports++
				counted += ev["count"].(float64)
			} else {
				logged++
			}
		}
		if reports > 0 {
			if reports != 1 || counted+logged != flood {
				t.Fatalf("%d lines: %v logged, %v reports counting %v:\n%s", flood, logged, reports, counted, logs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no count of the lines not logged within 5s of a flood:\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}

	e.reportAfter = time.Hour
	before := len(jsonLines(logs.String()))
	l.Print("http: TLS handshake error from 192.0.2.1:1: EOF")
	e.flush() // as stop does
	evs := jsonLines(logs.String())
	if len(evs) != before+1 || evs[before]["count"] != float64(1) {
		t.Errorf("a line not logged, then stop: want its count logged:\n%s", logs)
	}
}
