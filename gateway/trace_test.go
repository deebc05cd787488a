package gateway

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

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
