package jsonrpc

import (
	"errors"
	"strings"
	"testing"
)

// TestReadTextDepthBounds: exactly limit levels pass and one more is too deep, for objects,
// arrays and both; width costs nothing, however many siblings close and reopen; and brackets
// in strings, escaped quotes included, are not nesting.
func TestReadTextDepthBounds(t *testing.T) {
	nested := func(levels int) string {
		return strings.Repeat(`{"a":[`, levels/2) + strings.Repeat("[", levels%2) +
			strings.Repeat("]", levels%2) + strings.Repeat(`]}`, levels/2)
	}
	tests := []struct {
		name  string
		in    string
		limit int
		ok    bool
	}{
		{"at the limit", nested(MaxDepth), MaxDepth, true},
		{"one past", nested(MaxDepth + 1), MaxDepth, false},
		{"odd limit, at it", nested(5), 5, true},
		{"odd limit, one past", nested(6), 5, false},
		{"wide", "[" + strings.Repeat("[],", 500) + "[]]", 2, true},
		{"wide objects", `[` + strings.Repeat(`{},`, 3) + `{}]`, 2, true},
		{"brackets in strings", `{"a":"[[[[{{{{\"[[[["}`, 1, true},
		{"escaped backslash ends the string", `{"a":["\\"]}`, 1, false},
		{"flat", `{}`, 1, true},
	}
	for _, tt := range tests {
		_, _, tooDeep, err := readText([]byte(tt.in), tt.limit, descendNone)
		if err != nil || tooDeep == tt.ok {
			t.Errorf("%s: readText = too deep %v, %v; want too deep %v", tt.name, tooDeep, err, !tt.ok)
		}
	}
}

// TestParseClientDepth: a client message nested exactly MaxDepth deep is parsed, one level
// more is refused as invalid (-32600), not as a parse error.
func TestParseClientDepth(t *testing.T) {
	msg := func(levels int) []byte { // the envelope is level 1, params level 2
		inner := strings.Repeat("[", levels-2) + strings.Repeat("]", levels-2)
		return []byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":` + inner + `}}`)
	}
	if _, err := Parse(msg(MaxDepth), Options{Client: true}); err != nil {
		t.Errorf("depth %d: %v", MaxDepth, err)
	}
	_, err := Parse(msg(MaxDepth+1), Options{Client: true})
	if !errors.Is(err, errTooDeep) || errors.Is(err, ErrParse) {
		t.Errorf("depth %d: %v, want errTooDeep", MaxDepth+1, err)
	}
}
