package gateway

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// A token never reaches the trace, whether a client sent it as a form body (RFC 6750's
// access_token parameter, which gemgate does not accept) or inside any JSON field named like
// a credential, in either direction.
func TestTraceRedactsCredentials(t *testing.T) {
	f := newFixture(t)
	// A form body without a bearer header: refused with 401 and traced.
	form := "access_token=SECRET-FORM-1&scope=mcp%3Ause&client_secret=SECRET-FORM-2&refresh%5Ftoken=SECRET-FORM-3"
	if r := f.client("").post(form, "Content-Type", "application/x-www-form-urlencoded"); r.status != http.StatusUnauthorized {
		t.Fatalf("form body: status %d", r.status)
	}
	c := f.client("alice-rw")
	c.open()
	args := map[string]any{"text": "visible-text", "password": "SECRET-JSON-1", "api_key": "SECRET-JSON-2",
		"nested":   []any{map[string]any{"Access_Token": "SECRET-JSON-3", "clientSecret": map[string]any{"v": "SECRET-JSON-4"}}},
		"id_token": 987654321, "progressToken": "visible-progress"}
	c.rpc("2", "tools/call", map[string]any{"name": "echo", "arguments": args})
	logs := f.log.String()
	for _, secret := range []string{"SECRET-FORM-1", "SECRET-FORM-2", "SECRET-FORM-3", "SECRET-JSON-1", "SECRET-JSON-2", "SECRET-JSON-3", "SECRET-JSON-4", "987654321"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the trace shows %s", secret)
		}
	}
	for _, kept := range []string{"visible-text", "visible-progress", `scope=mcp%3Ause`, `\"password\":\"[redacted]\"`} {
		if !strings.Contains(logs, kept) {
			t.Errorf("the trace lost %s", kept)
		}
	}
}

func TestRedactBody(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"token":"a"}`, `{"token":"[redacted]"}`},
		{`{"a":{"Authorization":"Bearer x"},"b":[{"secret":{"x":[1,"}"]}}],"c":"token"}`, `{"a":{"Authorization":"[redacted]"},"b":[{"secret":"[redacted]"}],"c":"token"}`},
		{`{"pass\u0077ord" : "x" , "n":1}`, `{"pass\u0077ord" : "[redacted]" , "n":1}`},
		{`{"password":"trunc`, `{"password":"[redacted]"`},
		{`{"token":`, `{"token":`},
		{`{"progressToken":1,"nextCursor":"c"}`, `{"progressToken":1,"nextCursor":"c"}`},
		{`{"s":"\"token\":\"x\""}`, `{"s":"\"token\":\"x\""}`},
		{`access_token=abc&x=1`, `access_token=[redacted]&x=1`},
		{`x=1&Password=abc`, `x=1&Password=[redacted]`},
		{`plain text`, `plain text`},
	}
	for _, tt := range tests {
		if got := string(redact([]byte(tt.in))); got != tt.want {
			t.Errorf("redact(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestRefusedTraceRedacts(t *testing.T) {
	var buf bytes.Buffer
	tr := &Tracer{Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	req, _ := http.NewRequest(http.MethodPost, "/mcp", nil)
	tr.refused(req, 401, []byte("access_token=SECRET"), 0)
	if strings.Contains(buf.String(), "SECRET") {
		t.Errorf("refused trace shows the token: %s", buf.String())
	}
}
