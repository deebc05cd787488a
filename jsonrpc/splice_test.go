package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// editParams is ParamsObject's reading of m.Params, edited.
func editParams(m *Message, edit func(key string, value json.RawMessage) json.RawMessage) (json.RawMessage, error) {
	o, err := m.ParamsObject()
	if err != nil {
		return nil, err
	}
	return o.Edit(edit), nil
}

func TestEditObject(t *testing.T) {
	drop := func(key string) func(string, json.RawMessage) json.RawMessage {
		return func(k string, v json.RawMessage) json.RawMessage {
			if k == key {
				return nil
			}
			return v
		}
	}
	tests := []struct {
		name, in, want string
		edit           func(string, json.RawMessage) json.RawMessage
		err            error
	}{
		{"keeps bytes and order", `{"b": 1, "a":"x<&>", "\u0063":[1, 2]}`, `{"b":1,"a":"x<&>","\u0063":[1, 2]}`, drop("none"), nil},
		{"drops a member", `{"a":1,"b":2,"c":3}`, `{"a":1,"c":3}`, drop("b"), nil},
		{"drops the first", `{"a":1,"b":2}`, `{"b":2}`, drop("a"), nil},
		{"drops the only", `{"a":1}`, `{}`, drop("a"), nil},
		{"empty", ` {}`, `{}`, drop("a"), nil},
		{"replaces a value", `{"a":1,"b":2}`, `{"a":1,"b":{"x":true}}`, func(k string, v json.RawMessage) json.RawMessage {
			if k == "b" {
				return json.RawMessage(`{"x":true}`)
			}
			return v
		}, nil},
		{"a repeated key is refused", `{"a":1,"a":2}`, "", drop("none"), ErrInvalid},
		{"a case variant is refused", `{"name":1,"Name":2}`, "", drop("none"), ErrInvalid},
		{"not an object", `[1]`, "", drop("none"), nil},
		{"not JSON", `{"a":}`, "", drop("none"), ErrParse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EditObject(json.RawMessage(tc.in), "params", tc.edit)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("got %s, want an error", got)
				}
				if tc.err != nil && !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// ParamsObject skips the validation Parse has made; it must decide exactly as ReadObject.
// Params replaced after Parse are validated again.
func TestParamsObjectRevalidatesOtherBytes(t *testing.T) {
	m, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ParamsObject(); err != nil {
		t.Fatal(err)
	}
	out := *m
	out.Params = json.RawMessage(`{"a":`) // not JSON: a fast path would read past its end
	if _, err := out.ParamsObject(); !errors.Is(err, ErrParse) {
		t.Fatalf("error %v, want ErrParse", err)
	}
}

// FuzzParamsObjectAgrees: for any message Parse accepts, ParamsObject and its Edit decide as
// ReadObject and EditObject do on the same bytes, and an edit that keeps every member gives
// the same object back.
func FuzzParamsObjectAgrees(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a","Name":"b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"a":2}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"\u00e9":1,"\u00c9":2}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{ "k" : "v\"}" , "_meta":{"progressToken":7}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b, Options{})
		if err != nil || len(m.Params) == 0 {
			return
		}
		fast, fastErr := m.ParamsObject()
		slow, slowErr := ReadObject(m.Params, "params")
		if (fastErr == nil) != (slowErr == nil) || (fastErr != nil && fastErr.Error() != slowErr.Error()) {
			t.Fatalf("ParamsObject: %v; ReadObject: %v", fastErr, slowErr)
		}
		if fastErr != nil {
			return
		}
		if len(fast.members) != len(slow.members) {
			t.Fatalf("%d members, ReadObject %d", len(fast.members), len(slow.members))
		}
		keep := func(_ string, v json.RawMessage) json.RawMessage { return v }
		edited, err := editParams(m, keep)
		if err != nil {
			t.Fatalf("ParamsObject().Edit: %v", err)
		}
		again, err := EditObject(m.Params, "params", keep)
		if err != nil || !bytes.Equal(edited, again) {
			t.Fatalf("ParamsObject().Edit %s; EditObject %s, %v", edited, again, err)
		}
		var want, got bytes.Buffer
		if err := json.Compact(&want, m.Params); err != nil {
			t.Fatal(err)
		}
		if err := json.Compact(&got, edited); err != nil {
			t.Fatalf("edited params are not JSON: %v: %q", err, edited)
		}
		if want.String() != got.String() && !strings.Contains(string(m.Params), "\n") {
			t.Fatalf("kept every member: %s, was %s", got.String(), want.String())
		}
	})
}

// DropParams forgets the params and Parse's reading of them: ParamsObject then finds none of
// them, and the id and method stay.
func TestDropParamsForgetsTheReading(t *testing.T) {
	m, err := Parse([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`), Options{Client: true, Owned: true})
	if err != nil {
		t.Fatal(err)
	}
	m.DropParams()
	if m.Params != nil || m.params != nil || m.paramsRead != nil || m.paramsSum != 0 {
		t.Errorf("after DropParams: params %q, %d members read, reading %q, sum %d", m.Params, len(m.params), m.paramsRead, m.paramsSum)
	}
	if string(m.ID) != "7" || m.Method != "tools/call" {
		t.Errorf("after DropParams: id %s, method %q", m.ID, m.Method)
	}
	if o, _ := m.ParamsObject(); o.Has("name") {
		t.Errorf("ParamsObject after DropParams still reads the dropped params")
	}
}
