package jsonrpc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzObjectEditAgrees: editing an object already read gives the bytes EditObject gives
// when it reads the object itself, for an edit that drops, keeps and replaces members.
func FuzzObjectEditAgrees(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{ "drop" : 1 , "b":"x","swap":[1,2] }`, `{"\u0061":{"b":1},"drop":null}`} {
		f.Add([]byte(s))
	}
	edit := func(k string, v json.RawMessage) json.RawMessage {
		switch k {
		case "drop":
			return nil
		case "swap":
			return json.RawMessage(`"swapped"`)
		}
		return v
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wantErr := EditObject(b, "params", edit)
		o, err := ReadObject(b, "params")
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("ReadObject(%q): %v, EditObject: %v", b, err, wantErr)
		}
		if err != nil {
			return
		}
		if got := o.Edit(edit); !bytes.Equal(got, want) {
			t.Fatalf("Edit(%q) = %q, EditObject %q", b, got, want)
		}
	})
}
