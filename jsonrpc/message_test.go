package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		want     error // nil, ErrParse or ErrInvalid
		kind     string
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil, "request"},
		{"string id", `{"jsonrpc":"2.0","id":"a-b","method":"ping"}`, nil, "request"},
		{"big id", `{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}`, nil, "request"},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil, "notification"},
		{"result", `{"jsonrpc":"2.0","id":1,"result":{}}`, nil, "response"},
		{"error with null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, nil, "response"},
		{"leading space", "  {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n", nil, "notification"},
		{"empty", ``, ErrParse, ""},
		{"not json", `hello`, ErrParse, ""},
		{"truncated", `{"jsonrpc":"2.0","id":1`, ErrParse, ""},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, ErrInvalid, ""},
		{"old version", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, ErrInvalid, ""},
		{"no version", `{"id":1,"method":"ping"}`, ErrInvalid, ""},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, ErrInvalid, ""},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, ErrInvalid, ""},
		{"null request id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, ErrInvalid, ""},
		{"result and error", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, ErrInvalid, ""},
		{"response without result", `{"jsonrpc":"2.0","id":1}`, ErrInvalid, ""},
		{"nothing", `{"jsonrpc":"2.0"}`, ErrInvalid, ""},
		{"method with result", `{"jsonrpc":"2.0","id":1,"method":"x","result":1}`, ErrInvalid, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.in), Options{})
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("Parse(%q, Options{}) error = %v, want %v", tt.in, err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q, Options{}): %v", tt.in, err)
			}
			var kind string
			switch {
			case m.IsRequest():
				kind = "request"
			case m.IsNotification():
				kind = "notification"
			case m.IsResponse():
				kind = "response"
			}
			if kind != tt.kind {
				t.Errorf("kind = %q, want %q", kind, tt.kind)
			}
		})
	}
}

func TestEncodeKeepsIDBytes(t *testing.T) {
	for _, id := range []string{`"x\u00e9"`, `12345678901234567890`, `1.50`, `-0`, `null`, `"🙂"`} {
		m, err := Parse([]byte(`{"jsonrpc":"2.0","id":`+id+`,"result":{"a":1}}`), Options{})
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		back, err := Parse(m.Encode(), Options{})
		if err != nil {
			t.Fatalf("Parse(Encode, Options{}): %v", err)
		}
		if string(back.ID) != id {
			t.Errorf("id %s came back as %s", id, back.ID)
		}
	}
}

func TestErrorResponse(t *testing.T) {
	m := ErrorResponse([]byte(`"abc"`), CodeInternalError, "boom", map[string]string{"kind": "x"})
	got := string(m.Encode())
	want := `{"jsonrpc":"2.0","id":"abc","error":{"code":-32603,"message":"boom","data":{"kind":"x"}}}`
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if got := string(ErrorResponse(nil, CodeParseError, "bad", nil).Encode()); got != `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}` {
		t.Errorf("nil id: %s", got)
	}
}

// Encode writes raw fields as they are, but a raw field with a line break (valid JSON
// whitespace) must not cut the NDJSON line in two; odd method names are escaped.
func TestEncodeIsOneLine(t *testing.T) {
	m := &Message{ID: json.RawMessage(`7`), Method: "x/\"<é>\n", Params: json.RawMessage("{\n  \"a\": [1,\r\n 2]\n}")}
	line := m.Encode()
	if bytes.ContainsAny(line, "\r\n") {
		t.Fatalf("encoded message spans lines: %q", line)
	}
	back, err := Parse(line, Options{})
	if err != nil {
		t.Fatalf("Parse(Encode, Options{}): %v", err)
	}
	if back.Method != m.Method || string(back.Params) != `{"a":[1,2]}` || string(back.ID) != "7" {
		t.Errorf("round trip: method %q params %s id %s", back.Method, back.Params, back.ID)
	}
	if got := string((&Message{ID: json.RawMessage(`"a"`), Result: json.RawMessage(`{}`)}).Encode()); got != `{"jsonrpc":"2.0","id":"a","result":{}}` {
		t.Errorf("Encode = %s", got)
	}
}
