package trace

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
)

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
	tr.Refused(httptest.NewRecorder(), Request{Method: "POST"}, 401, strings.NewReader("access_token=SECRET"), 1<<20)
	if strings.Contains(buf.String(), "SECRET") {
		t.Errorf("refused trace shows the token: %s", buf.String())
	}
}
