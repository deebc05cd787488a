package gateway

import (
	"bytes"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func TestTracerCut(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		body   string
		unread int
		want   string
	}{
		{"short", 100, `{"a":1}`, 0, `{"a":1}`},
		{"newlines and tabs escaped", 100, "{\"a\":\n\t\"b\r\"}", 0, `{"a":\n\t"b\r"}`},
		{"cut", 4, `0123456789`, 0, `0123...(+6 more)`},
		{"cut counts escapes", 4, "01\n\n", 0, `01\n...(+2 more)`},
		{"no cap", 0, strings.Repeat("x", 10000), 0, strings.Repeat("x", 10000)},
		{"unread rest", 100, `{"a"`, 50, `{"a"...(+50 more)`},
		{"cut and unread rest", 2, `{"a"`, 50, `{"...(+52 more)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (&Tracer{Limit: tt.limit}).cut([]byte(tt.body), tt.unread); got != tt.want {
				t.Errorf("cut = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTracerOneLinePerMessage(t *testing.T) {
	var buf bytes.Buffer
	tr := &Tracer{Logger: slog.New(slog.NewTextHandler(&buf, nil)), Limit: 4096}
	tr.inbound(traceRequest("s1"), []byte("{\n\"jsonrpc\":\"2.0\",\n\t\"method\":\"x\"\n}\n"))
	tr.outbound("s1", []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines for 2 messages:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "direction=client_to_gateway") || !strings.Contains(lines[0], "session=s1") || !strings.Contains(lines[0], "size=") {
		t.Errorf("line lacks direction, session or size: %s", lines[0])
	}
	var nilTracer *Tracer
	nilTracer.inbound(traceRequest("s"), []byte("x")) // a nil tracer is off, not a crash
}

// traceRecords are the fixture's trace records for client-to-gateway messages.
func traceRecords(t *testing.T, f *fixture) []map[string]any {
	var out []map[string]any
	for _, rec := range f.log.records(t) {
		if rec["msg"] == "trace" && rec["direction"] == "client_to_gateway" {
			out = append(out, rec)
		}
	}
	return out
}

func TestRefusedRequestsAreTracedWithBody(t *testing.T) {
	const secret = "sekrit-token-7f3a"
	body := "{\"jsonrpc\":\"2.0\",\n\"id\":1,\"method\":\"tools/list\"}"
	tests := []struct {
		name   string
		token  string
		origin string
		status int
	}{
		{"no token", "", "", http.StatusUnauthorized},
		{"bad token", secret, "", http.StatusUnauthorized},
		{"bad origin", "alice-rw", "https://evil.example", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			r := f.client(tt.token).post(body, "Origin", tt.origin)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d", r.status, tt.status)
			}
			recs := traceRecords(t, f)
			if len(recs) != 1 {
				t.Fatalf("%d trace records, want 1: %s", len(recs), f.log.String())
			}
			rec := recs[0]
			if rec["refused"] != float64(tt.status) || rec["method"] != "POST" {
				t.Errorf("record %v lacks refused=%d and method", rec, tt.status)
			}
			if got := rec["body"]; got != strings.ReplaceAll(body, "\n", `\n`) {
				t.Errorf("traced body %q", got)
			}
			if all := f.log.String(); strings.Contains(all, secret) || strings.Contains(all, "Bearer") || strings.Contains(strings.ToLower(all), "authorization") {
				t.Error("a token or header reached the log")
			}
		})
	}
}

func TestRefusedTraceIsCapped(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Trace.Limit = 16 })
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"` + strings.Repeat("p", 1000) + `"}}`
	if r := f.client("").post(body); r.status != http.StatusUnauthorized {
		t.Fatalf("status %d", r.status)
	}
	recs := traceRecords(t, f)
	if len(recs) != 1 {
		t.Fatalf("%d trace records", len(recs))
	}
	want := body[:16] + "...(+" + strconv.Itoa(len(body)-16) + " more)"
	if recs[0]["body"] != want || recs[0]["size"] != float64(len(body)) {
		t.Errorf("body %q size %v, want %q size %d", recs[0]["body"], recs[0]["size"], want, len(body))
	}
}

func TestPolicyRefusalTracedOnce(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-ro")
	c.open()
	before := len(traceRecords(t, f))
	if r := c.callTool("3", "write_note", map[string]any{"name": "n", "text": "x"}); r.status != http.StatusForbidden {
		t.Fatalf("status %d", r.status)
	}
	recs := traceRecords(t, f)[before:]
	if len(recs) != 1 || !strings.Contains(recs[0]["body"].(string), "write_note") || recs[0]["refused"] != nil {
		t.Errorf("want the body traced once by the session layer, got %v", recs)
	}
}

// traceRequest is a POST of session id with no token, as the trace sees one.
func traceRequest(session string) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	r.Header.Set(headerSessionID, session)
	return r
}
