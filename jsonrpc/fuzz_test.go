package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzParseRemapRoundTrip: whatever a client sends, parsing never panics, and a request's id
// survives the trip through a worker byte for byte: the gateway sends the request on with an
// id of its own, the worker answers that id, and the answer goes back with the client's id
// restored, exactly as the client wrote it.
func FuzzParseRemapRoundTrip(f *testing.F) {
	// Seeds: testdata/fuzz/FuzzParseRemapRoundTrip.
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b, Options{Client: true})
		if err != nil {
			if !errors.Is(err, ErrParse) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseClient error %v wraps neither ErrParse nor ErrInvalid", err)
			}
			return
		}
		if m.ID != nil && !bytes.Contains(b, m.ID) {
			t.Fatalf("id %q is not the client's bytes", m.ID)
		}
		if !m.IsRequest() {
			return
		}
		toWorker := *m
		toWorker.ID = json.RawMessage("17")
		line := toWorker.Encode()
		if bytes.ContainsAny(line, "\r\n") {
			t.Fatalf("the line to the worker spans lines: %q", line)
		}
		w, err := Parse(line, Options{})
		if err != nil {
			t.Fatalf("the worker's copy %q does not parse: %v", line, err)
		}
		if string(w.ID) != "17" || w.Method != m.Method || !sameJSON(w.Params, m.Params) {
			t.Fatalf("the worker reads id %s method %q params %s; the gateway sent %s %q %s", w.ID, w.Method, w.Params, toWorker.ID, m.Method, m.Params)
		}
		answer, err := Parse([]byte(`{"jsonrpc":"2.0","id":17,"result":{"ok":true}}`), Options{})
		if err != nil {
			t.Fatal(err)
		}
		answer.ID = m.ID // as the worker's process restores it
		back, err := Parse(answer.Encode(), Options{})
		if err != nil {
			t.Fatalf("the answer %q does not parse: %v", answer.Encode(), err)
		}
		if !bytes.Equal(back.ID, m.ID) {
			t.Fatalf("id %q came back as %q", m.ID, back.ID)
		}
	})
}

func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// FuzzReadObject: the strict reader never panics and agrees with encoding/json's own token
// reading of the same object: the same keys with the same values, or a refusal exactly when
// two keys are equal without regard to case.
func FuzzReadObject(f *testing.F) {
	// Seeds: testdata/fuzz/FuzzReadObject.
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := ReadObject(b, "params")
		keys, values, refErr := referenceObject(b)
		if refErr != nil {
			if err == nil {
				t.Fatalf("ReadObject accepted %q, which encoding/json cannot read as an object: %v", b, refErr)
			}
			return
		}
		folded := map[string]bool{}
		dup := false
		for _, k := range keys {
			f := fold(k)
			dup = dup || folded[f]
			folded[f] = true
		}
		if dup {
			var ke *KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("ReadObject(%q) = %v, want a KeyError", b, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("ReadObject(%q): %v", b, err)
		}
		if len(o.members) != len(keys) {
			t.Fatalf("ReadObject(%q) has %d keys, encoding/json %d", b, len(o.members), len(keys))
		}
		for i, k := range keys {
			raw, ok := o.Raw(k)
			if !ok || !sameJSON(raw, values[i]) {
				t.Fatalf("ReadObject(%q)[%q] = %q, encoding/json %q", b, k, raw, values[i])
			}
			if s, ok, err := o.String(k); err == nil && ok {
				var want string
				if json.Unmarshal(values[i], &want) != nil || s != want {
					t.Fatalf("String(%q) = %q, encoding/json %q", k, s, want)
				}
			}
		}
	})
}

// referenceObject reads b's top-level object with encoding/json's decoder: its keys in order
// and their raw values. Two keys that differ only in case, or repeat, are both listed.
func referenceObject(b []byte) ([]string, []json.RawMessage, error) {
	if !json.Valid(b) {
		return nil, nil, errors.New("invalid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, nil, errors.New("not an object")
	}
	var keys []string
	var values []json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, tok.(string))
		values = append(values, v)
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return nil, nil, err
	}
	return keys, values, nil
}

// referenceDepth is how deeply b (valid JSON) nests, as encoding/json's tokens tell.
func referenceDepth(b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}
