package jsonrpc

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// sameBytes is about memory, not contents: the shortcut it guards may skip validation only
// for the very bytes Parse validated.
func TestSameBytes(t *testing.T) {
	a := []byte(`{"x":1}`)
	tests := []struct {
		name string
		a, b []byte
		want bool
	}{
		{"the same slice", a, a, true},
		{"an equal copy", a, slices.Clone(a), false},
		{"a prefix of it", a[:3], a, false},
		{"the same start, longer", a, a[:3], false},
		{"a later start", a[1:], a[1:], true},
		{"empty", a[:0], a[:0], false},
		{"nil", nil, nil, false},
	}
	for _, tt := range tests {
		if got := sameBytes(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: sameBytes = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Params that Parse did not validate (set by hand, or replaced after Parse) are validated
// before they are read or spliced.
func TestParamsObjectValidatesParamsParseDidNotSee(t *testing.T) {
	m, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ParamsObject(); err != nil {
		t.Fatalf("ParamsObject on what Parse validated: %v", err)
	}
	for name, p := range map[string]json.RawMessage{
		"replaced":          json.RawMessage(`{"a":}`),
		"replaced, shorter": m.Params[:len(m.Params)-1],
	} {
		m := *m
		m.Params = p
		if _, err := m.ParamsObject(); !errors.Is(err, ErrParse) {
			t.Errorf("%s: ParamsObject(%s) = %v, want ErrParse", name, p, err)
		}
		if out, err := editParams(&m, func(_ string, v json.RawMessage) json.RawMessage { return v }); err == nil {
			t.Errorf("%s: ParamsObject().Edit on %s = %s, want an error", name, p, out)
		}
	}
	byHand := &Message{Method: "m", Params: json.RawMessage(`{"a":1,"a":2}`)}
	if _, err := byHand.ParamsObject(); err == nil {
		t.Errorf("ParamsObject on params never parsed, with a repeated key: no error")
	}
}
