package jsonrpc

import (
	"encoding/json"
	"errors"
	"testing"
)

// The sameBytes shortcut trusts Params because they are the very bytes Parse validated, by
// address and length. Bytes edited in place after Parse keep both, so bytes that were never
// validated are read (and spliced) as valid JSON: ParamsObject must not accept them.
func TestAttackParamsObjectAfterInPlaceEdit(t *testing.T) {
	m, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peek","x":"abcd"}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Same address, same length, no longer JSON: "abcd" (6 bytes) becomes abcdef.
	copy(m.Params[len(`{"name":"peek","x":`):], `abcdef`)
	if json.Valid(m.Params) {
		t.Fatalf("setup: %s is still valid JSON", m.Params)
	}
	if _, err := m.ParamsObject(); !errors.Is(err, ErrParse) {
		t.Errorf("ParamsObject on params edited in place to %s: err %v, want ErrParse", m.Params, err)
	}
	out, err := editParams(m, func(_ string, v json.RawMessage) json.RawMessage { return v })
	if err == nil && !json.Valid(out) {
		t.Errorf("ParamsObject().Edit spliced invalid JSON for the worker: %s", out)
	}
}
