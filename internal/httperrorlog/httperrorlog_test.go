package httperrorlog

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func newTestHTTPErrorLog(t *testing.T) (*Log, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	return New(slog.New(slog.NewJSONHandler(logs, nil))), logs
}

// syncBuffer collects log output from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
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

// A line of net/http's that is neither long nor part of a flood is logged at once, at warn,
// as net/http wrote it.
func TestHTTPErrorLogPassesAnOrdinaryLineWhole(t *testing.T) {
	e, logs := newTestHTTPErrorLog(t)
	const line = "http: TLS handshake error from 192.0.2.7:50312: remote error: tls: bad certificate"
	e.Logger().Print(line)
	evs := jsonLines(logs.String())
	if len(evs) != 1 || evs[0]["msg"] != line || evs[0]["level"] != "WARN" {
		t.Fatalf("one ordinary error line of net/http's logged as:\n%s\nwant one WARN line with msg %q", logs, line)
	}
}

// A line is clipped by its bytes before it is escaped: one of invalid UTF-8 and control
// bytes, which JSON writes six bytes each, still makes a JSON line under 8 KiB.
func TestHTTPErrorLogClipsUnprintableText(t *testing.T) {
	e, logs := newTestHTTPErrorLog(t)
	e.Logger().Print("http: TLS handshake error from 192.0.2.7:50312: " + strings.Repeat("\xff\x01\u202e", 20000))
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
// it again (a second later), which comes through whole. In a synctest bubble the clock
// stands still through the flood, however long a loaded machine takes over it. A writer
// that took the burst's last token may be overtaken by others the rate refuses before it
// writes its line; it then reports their count first, so the report may come in the flood
// too, and what the test counts is every line refused, reported once.
func TestHTTPErrorLogLimitsAFloodAndCountsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, logs := newTestHTTPErrorLog(t)
		const flood = 500
		var wg sync.WaitGroup
		for g := range 5 {
			wg.Go(func() {
				l := e.Logger()
				for i := range flood / 5 {
					l.Printf("http: TLS handshake error from 192.0.2.%d:%d: EOF", g, 40000+i)
				}
			})
		}
		wg.Wait()
		if lines, _, other := floodLines(jsonLines(logs.String())); lines != httpErrorBurst || other != 0 {
			t.Fatalf("%d error lines at once: %d logged, want the burst of %d:\n%s", flood, lines, httpErrorBurst, logs)
		}
		time.Sleep(time.Second / httpErrorLines * 11 / 10) // past one token's refill, before the report
		const line = "http: Accept error: accept tcp 127.0.0.1:8000: accept4: too many open files; retrying in 5ms"
		e.Logger().Print(line)
		evs := jsonLines(logs.String())
		last := evs[len(evs)-1]
		if last["msg"] != line || last["level"] != "WARN" {
			t.Errorf("the line after the flood logged as %v, want msg %q", last, line)
		}
		if lines, reported, other := floodLines(evs[:len(evs)-1]); lines != httpErrorBurst || reported != flood-httpErrorBurst || other != 0 {
			t.Fatalf("after the flood, one line more: want the flood's %d lines logged and %d counted as not logged, got %d and %d:\n%s",
				httpErrorBurst, flood-httpErrorBurst, lines, reported, logs)
		}
	})
}

// floodLines counts the flood's lines in evs, sums the counts its reports give, and counts
// the lines that are neither.
func floodLines(evs []map[string]any) (lines, reported, other int) {
	for _, ev := range evs {
		msg, _ := ev["msg"].(string)
		switch {
		case strings.HasPrefix(msg, "http: TLS handshake error from 192.0.2."):
			lines++
		case msg == "HTTP server error log lines not logged: over the rate":
			n, _ := ev["count"].(float64)
			reported += int(n)
		default:
			other++
		}
	}
	return lines, reported, other
}

// When no line follows a flood, the count of the lines not logged is still written, once,
// httpErrorReport after the first of them; and when gemgate stops.
func TestHTTPErrorLogReportsAFloodWithNoLineAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, logs := newTestHTTPErrorLog(t)
		const flood = 100
		l := e.Logger()
		for i := range flood {
			l.Printf("http: TLS handshake error from 192.0.2.1:%d: EOF", 40000+i)
		}
		time.Sleep(httpErrorReport - time.Millisecond)
		synctest.Wait()
		if n := len(jsonLines(logs.String())); n != httpErrorBurst {
			t.Fatalf("a report before httpErrorReport: %d lines:\n%s", n, logs)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		evs := jsonLines(logs.String())
		if len(evs) != httpErrorBurst+1 || evs[httpErrorBurst]["msg"] != "HTTP server error log lines not logged: over the rate" ||
			evs[httpErrorBurst]["count"] != float64(flood-httpErrorBurst) {
			t.Fatalf("%d lines, then httpErrorReport: want %d logged and one report counting the rest:\n%s", flood, httpErrorBurst, logs)
		}

		// The rate has given back a token a second since: a flood of as many and one more
		// leaves one line not logged.
		tokens := int(httpErrorReport / time.Second * httpErrorLines)
		for i := range tokens + 1 {
			l.Printf("http: TLS handshake error from 192.0.2.1:%d: EOF", i)
		}
		before := len(jsonLines(logs.String()))
		e.Flush() // as stop does
		evs = jsonLines(logs.String())
		if len(evs) != before+1 || evs[before]["count"] != float64(1) {
			t.Errorf("a line not logged, then stop: want its count logged:\n%s", logs)
		}
	})
}
