package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestEncodeLineBreakFirst: a raw field whose very first byte is a line break is compacted
// like any other; the check must not skip index 0.
func TestEncodeLineBreakFirst(t *testing.T) {
	for _, raw := range []string{"\n{\"a\":1}", "\r\n{\"a\":1}", "\r{\"a\":1}"} {
		for name, m := range map[string]*Message{
			"id":     {ID: json.RawMessage("\n7"), Result: json.RawMessage(raw)},
			"params": {ID: json.RawMessage("7"), Method: "m", Params: json.RawMessage(raw)},
			"result": {ID: json.RawMessage("7"), Result: json.RawMessage(raw)},
			"error":  {ID: json.RawMessage("7"), Error: json.RawMessage(raw)},
		} {
			line := m.Encode()
			if bytes.ContainsAny(line, "\r\n") {
				t.Errorf("%s %q: encoded message spans lines: %q", name, raw, line)
			}
			if _, err := Parse(line, Options{}); err != nil {
				t.Errorf("%s %q: Parse(Encode, Options{}) = %v", name, raw, err)
			}
		}
	}
}

// TestEncodeSizesItsBuffer: Encode allocates once, with room for the framing newline, for
// a message of any size and shape; a message where one field dwarfs the others is where a
// wrong size estimate would show.
func TestEncodeSizesItsBuffer(t *testing.T) {
	big := `"` + strings.Repeat("x", 4096) + `"`
	msgs := map[string]*Message{
		"all fields": {ID: json.RawMessage(`1`), Method: "m", Params: json.RawMessage(`{}`), Result: json.RawMessage(`2`), Error: json.RawMessage(`{"code":1,"message":""}`)},
		"big id":     {ID: json.RawMessage(big), Result: json.RawMessage(`1`)},
		"big method": {Method: strings.Repeat("m", 4096)},
		"big params": {Method: "m", Params: json.RawMessage(big)},
		"big result": {ID: json.RawMessage(`1`), Result: json.RawMessage(big)},
		"big error":  {ID: json.RawMessage(`1`), Error: json.RawMessage(`{"code":1,"message":` + big + `}`)},
	}
	for name, m := range msgs {
		line := m.Encode()
		if cap(line) <= len(line) {
			t.Errorf("%s: no room for the newline (len %d, cap %d)", name, len(line), cap(line))
		}
		if n := testing.AllocsPerRun(10, func() { _ = append(m.Encode(), '\n') }); n != 1 {
			t.Errorf("%s: Encode and framing allocate %v times, want 1", name, n)
		}
	}
}

// TestEncodeMethodNames: plain ASCII method names are written as they are; anything JSON
// or HTML would escape takes the encoder's path, and both read back as the same name.
func TestEncodeMethodNames(t *testing.T) {
	for _, method := range []string{"tools/call", "a b", "~", " ", "\x7f", "é", "a<b", "a>b", "a&b", "a\"b", `a\b`, "\x1f", "a\xffb", "\u2028"} {
		line := (&Message{Method: method}).Encode()
		back, err := Parse(line, Options{})
		if err != nil {
			t.Errorf("%q: Parse(Encode, Options{}) = %v (%s)", method, err, line)
			continue
		}
		if utf8.ValidString(method) && back.Method != method {
			t.Errorf("%q came back as %q", method, back.Method)
		}
		want, _ := json.Marshal(method)
		if !bytes.Contains(line, want) {
			t.Errorf("%q: encoded as %s, want the method as json.Marshal writes it, %s", method, line, want)
		}
	}
}

// TestEncodePlainMethodNameCostsNothing: a method name of printable ASCII that needs no
// escape (a space included) is written directly into the line, with no encoder and no
// allocation beyond the line itself.
func TestEncodePlainMethodNameCostsNothing(t *testing.T) {
	for _, method := range []string{"tools/call", "a b", " ", "!", "~", "notifications/progress"} {
		m := &Message{ID: json.RawMessage(`1`), Method: method}
		if n := testing.AllocsPerRun(10, func() { _ = m.Encode() }); n != 1 {
			t.Errorf("Encode with method %q allocates %v times, want 1", method, n)
		}
	}
}

// TestKeyErrorClipsLongKeys: a key quoted in an error is kept whole up to 64 bytes and cut
// beyond, so an attacker cannot make the error (and the log line) as large as the message.
func TestKeyErrorClipsLongKeys(t *testing.T) {
	k64 := strings.Repeat("k", 64)
	for _, tt := range []struct{ key, want string }{
		{k64, `"` + k64 + `"`},
		{k64 + "x", `"` + k64 + `...(+1 more)"`},
	} {
		msg := (&KeyError{Object: "params", Key: tt.key, Other: tt.key}).Error()
		if !strings.Contains(msg, tt.want) || strings.Contains(msg, tt.key+"x") {
			t.Errorf("error for a %d-byte key: %s; want it to quote %s", len(tt.key), msg, tt.want)
		}
	}
}

// TestEncodeKeepsRawBytes: a raw field without a line break is copied byte for byte, its
// spacing included; only a line break makes Encode compact it.
func TestEncodeKeepsRawBytes(t *testing.T) {
	params := `{ "a" : [1, 2],  "b":"x y" }`
	line := (&Message{Method: "m", Params: json.RawMessage(params)}).Encode()
	if want := `{"jsonrpc":"2.0","method":"m","params":` + params + `}`; string(line) != want {
		t.Errorf("Encode = %s, want %s", line, want)
	}
}

// TestKeyErrorWording: a key given twice and a key that differs only in case are told
// apart, so the client learns which mistake it made.
func TestKeyErrorWording(t *testing.T) {
	twice := (&KeyError{Object: "params", Key: "name", Other: "name"}).Error()
	if !strings.Contains(twice, `key "name" appears more than once in params`) {
		t.Errorf("repeated key: %s", twice)
	}
	cased := (&KeyError{Object: "params", Key: "Name", Other: "name"}).Error()
	if !strings.Contains(cased, `key "Name" in params is ambiguous with "name"`) {
		t.Errorf("case variant: %s", cased)
	}
}
