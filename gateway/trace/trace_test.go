package trace

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
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
	tr.Inbound(Request{Session: "s1"}, []byte("{\n\"jsonrpc\":\"2.0\",\n\t\"method\":\"x\"\n}\n"))
	tr.Outbound("s1", []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines for 2 messages:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "direction=client_to_gateway") || !strings.Contains(lines[0], "session=s1") || !strings.Contains(lines[0], "size=") {
		t.Errorf("line lacks direction, session or size: %s", lines[0])
	}
	var nilTracer *Tracer
	nilTracer.Inbound(Request{Session: "s"}, []byte("x")) // a nil tracer is off, not a crash
	if nilTracer.WithSecrets(nil) != nil {
		t.Error("a nil tracer's copy is not nil")
	}
}

// A JWS in compact form is taken out of a line wherever it stands.
func TestCutRedactsEveryJWT(t *testing.T) {
	const jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXBhcnQ"
	got := (&Tracer{}).cut([]byte(`{"text":"token `+jwt+` here","jwt2":"`+jwt+`"}`), 0)
	if strings.Contains(got, "c2lnbmF0dXJlLXBhcnQ") || strings.Count(got, redacted) != 2 {
		t.Errorf("cut = %s: want both JWTs redacted", got)
	}
}

// The workers' secrets are taken out of every line of the copy WithSecrets makes, and only
// of it: the caller's Tracer is left as it was.
func TestWithSecretsRedactsEveryLine(t *testing.T) {
	var buf bytes.Buffer
	orig := &Tracer{Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	tr := orig.WithSecrets(func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("CRED"), []byte(redacted)) })
	tr.Inbound(Request{}, []byte("in CRED"))
	tr.Outbound("", []byte("out CRED"))
	tr.Line("from_worker", "w", []byte("worker CRED"))
	tr.Refused(httptest.NewRecorder(), Request{}, 401, strings.NewReader("refused CRED"), 1<<20)
	if n := strings.Count(buf.String(), redacted); strings.Contains(buf.String(), "CRED") || n != 4 {
		t.Errorf("%d lines redacted: %s", n, buf.String())
	}
	if orig.secrets != nil {
		t.Error("WithSecrets changed the caller's Tracer")
	}
}

// The request's own bearer token is taken out of its lines, a refused request's too.
func TestRequestsBearerIsRedacted(t *testing.T) {
	var buf bytes.Buffer
	tr := &Tracer{Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	r := Request{Bearer: "tok-7f3a"}
	tr.Inbound(r, []byte(`{"text":"my tok-7f3a"}`))
	tr.Refused(httptest.NewRecorder(), r, 401, strings.NewReader("x=tok-7f3a"), 1<<20)
	if strings.Contains(buf.String(), "tok-7f3a") || strings.Count(buf.String(), redacted) != 2 {
		t.Errorf("the bearer token reached a line: %s", buf.String())
	}
}
