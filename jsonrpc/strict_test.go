package jsonrpc

import (
	"errors"
	"strings"
	"testing"
)

// The envelope is read as the SDKs read it: exact keys, each once. encoding/json took
// "Method" for "method" and kept the last of repeated keys.
func TestParseEnvelopeIsStrict(t *testing.T) {
	tests := []struct {
		name, in string
	}{
		{"method in another case", `{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`},
		{"method twice", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}`},
		{"method and a case variant", `{"jsonrpc":"2.0","id":1,"method":"tools/list","METHOD":"tools/call"}`},
		{"params twice", `{"jsonrpc":"2.0","id":1,"method":"x","params":{},"params":{"a":1}}`},
		{"id twice", `{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}`},
		{"id in another case", `{"jsonrpc":"2.0","ID":1,"method":"x"}`},
		{"jsonrpc in another case", `{"JSONRPC":"2.0","id":1,"method":"x"}`},
		{"unknown key twice", `{"jsonrpc":"2.0","id":1,"method":"x","extra":1,"Extra":2}`},
		{"escaped repeat", `{"jsonrpc":"2.0","id":1,"method":"a","m\u0065thod":"b"}`},
		{"unicode fold (long s)", `{"jsonrpc":"2.0","id":1,"method":"a","params":{},"paramſ":{}}`},
		{"kelvin sign fold", `{"jsonrpc":"2.0","id":1,"method":"a","k":1,"\u212a":2}`},
		{"method not a string", `{"jsonrpc":"2.0","id":1,"method":7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.in), Options{})
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%s, Options{}) = %+v, %v; want ErrInvalid", tt.in, m, err)
			}
		})
	}
}

func TestParseKeepsRawMembers(t *testing.T) {
	in := `{ "jsonrpc" : "2.0" , "id" : "a\u0041" , "method" : "m" , "params" : { "x" : [1, 2] } , "other" : 3 }`
	m, err := Parse([]byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if string(m.ID) != `"a\u0041"` || m.Method != "m" || string(m.Params) != `{ "x" : [1, 2] }` {
		t.Errorf("got id %s method %q params %s", m.ID, m.Method, m.Params)
	}
}

func TestReadObject(t *testing.T) {
	tests := []struct {
		name, in string
		err      error // nil, ErrInvalid, ErrParse
		typeErr  bool
	}{
		{"plain", `{"name":"peek","arguments":{"Name":1,"name":2}}`, nil, false},
		{"empty", ` {}`, nil, false},
		{"case variant", `{"name":"destroy","Name":"peek"}`, ErrInvalid, false},
		{"exact repeat", `{"name":"destroy","name":"peek"}`, ErrInvalid, false},
		{"escaped repeat", `{"name":"destroy","n\u0061me":"peek"}`, ErrInvalid, false},
		{"not an object", `["name"]`, nil, true},
		{"not json", `{"name":`, ErrParse, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadObject([]byte(tt.in), "params")
			var te *TypeError
			switch {
			case tt.typeErr:
				if !errors.As(err, &te) {
					t.Fatalf("err = %v, want a TypeError", err)
				}
			case tt.err == nil && err != nil, tt.err != nil && !errors.Is(err, tt.err):
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
		})
	}
}

func TestObjectAccessors(t *testing.T) {
	o, err := ReadObject([]byte(`{"name":"pe\u0065k","n":3,"nul":null,"_meta":{"progressToken":"t","ProgressTokens":1}}`), "params")
	if err != nil {
		t.Fatal(err)
	}
	if s, ok, err := o.String("name"); s != "peek" || !ok || err != nil {
		t.Errorf("String(name) = %q %v %v", s, ok, err)
	}
	if _, ok, err := o.String("nul"); ok || err != nil {
		t.Errorf("String(nul) = %v %v, want absent", ok, err)
	}
	if _, _, err := o.String("n"); err == nil {
		t.Error("String(n) of a number: no error")
	}
	if o.Has("Name") || !o.Has("name") {
		t.Error("Has is not exact")
	}
	meta, ok, err := o.Object("_meta")
	if !ok || err != nil {
		t.Fatalf("Object(_meta) = %v %v", ok, err)
	}
	if err := meta.Exact("progressToken"); err != nil {
		t.Errorf("Exact: %v (ProgressTokens is another key)", err)
	}
	if raw, _ := meta.Raw("progressToken"); string(raw) != `"t"` {
		t.Errorf("progressToken = %s", raw)
	}
	bad, _ := ReadObject([]byte(`{"progresstoken":1}`), "params._meta")
	var ke *KeyError
	if err := bad.Exact("progressToken"); !errors.As(err, &ke) || !errors.Is(err, ErrInvalid) {
		t.Errorf("Exact(progresstoken) = %v, want a KeyError", err)
	}
}

func TestParseClientLimits(t *testing.T) {
	deep := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":` +
		strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}`
	if _, err := Parse([]byte(deep), Options{Client: true}); !errors.Is(err, errTooDeep) || !errors.Is(err, ErrInvalid) {
		t.Errorf("1000 deep: %v, want errTooDeep", err)
	}
	ok := `{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", 60) + strings.Repeat("]", 60) + `}`
	if _, err := Parse([]byte(ok), Options{Client: true}); err != nil {
		t.Errorf("60 deep: %v", err)
	}
	brackets := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"` + strings.Repeat("[", 1000) + `"}}`
	if _, err := Parse([]byte(brackets), Options{Client: true}); err != nil {
		t.Errorf("brackets inside a string: %v", err)
	}
	if _, err := Parse([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\xff\"}"), Options{Client: true}); !errors.Is(err, ErrParse) {
		t.Errorf("invalid UTF-8: %v, want ErrParse", err)
	}
	if _, err := Parse([]byte(strings.Repeat("[", 1000)), Options{Client: true}); !errors.Is(err, ErrParse) {
		t.Errorf("deep garbage: %v, want ErrParse", err)
	}
}

// A reader reuses its line buffer: a parsed message must not alias it.
func TestParseDoesNotAliasInput(t *testing.T) {
	b := []byte(`{"jsonrpc":"2.0","id":1,"result":{"a":1}}`)
	m, err := Parse(b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 'x'
	}
	if string(m.ID) != "1" || string(m.Result) != `{"a":1}` {
		t.Errorf("message changed with its input: id %s result %s", m.ID, m.Result)
	}
}
