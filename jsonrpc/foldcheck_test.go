package jsonrpc

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The duplicate check of the strict reader compares a small object's keys pairwise with
// strings.EqualFold and folds only a large object's keys into a map. The reader as it was,
// every key folded into a map, is kept here as the oracle the new one must agree with.

// oracleReadValidObject is readValidObject as it was before the pairwise check: every key
// folded (fold) and looked up in a map.
func oracleReadValidObject(raw []byte, name string) (Object, error) {
	w := scanner{b: raw}
	w.space()
	if w.i >= len(w.b) || w.b[w.i] != '{' {
		return Object{}, &TypeError{Field: name, Want: "an object"}
	}
	o := Object{name: name}
	seen := map[string]string{}
	w.i++
	for {
		w.space()
		if w.b[w.i] == '}' {
			return o, nil
		}
		if w.b[w.i] == ',' {
			w.i++
			w.space()
		}
		keyStart := w.i
		key, err := w.str()
		if err != nil {
			return Object{}, err
		}
		rawKey := raw[keyStart:w.i:w.i]
		f := fold(key)
		if other, dup := seen[f]; dup {
			return Object{}, &KeyError{Object: name, Key: key, Other: other}
		}
		seen[f] = key
		w.space()
		w.i++
		w.space()
		start := w.i
		w.skip()
		o.members = append(o.members, member{key: key, rawKey: rawKey, value: raw[start:w.i:w.i]})
	}
}

// agreeWithOracle fails t unless ReadObject and the oracle read b alike: the same error, or
// the same members.
func agreeWithOracle(t *testing.T, b []byte) {
	t.Helper()
	got, err := ReadObject(b, "params")
	if v, _ := validate(b, false); v != validJSON {
		return // refused before the keys are read, by both
	}
	want, wantErr := oracleReadValidObject(b, "params")
	if fmt.Sprint(err) != fmt.Sprint(wantErr) || reflect.TypeOf(err) != reflect.TypeOf(wantErr) {
		t.Fatalf("ReadObject(%q) = %v, the folding map said %v", b, err, wantErr)
	}
	var ke, wantKE *KeyError
	if errors.As(err, &ke) && errors.As(wantErr, &wantKE) && *ke != *wantKE {
		t.Fatalf("ReadObject(%q) = %+v, the folding map said %+v", b, *ke, *wantKE)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadObject(%q) = %+v, the folding map read %+v", b, got, want)
	}
}

// objectOf is a JSON object with the given keys, each with value 1, keys written as JSON
// strings (escapes allowed).
func objectOf(keys ...string) []byte {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:1", k)
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// TestFoldCheckAgreesAcrossTheThreshold: a case variant placed anywhere, in objects smaller
// than, as large as and larger than the pairwise limit, is refused with the same KeyError
// (the key, and the earlier key it collides with) as the folding map gave.
func TestFoldCheckAgreesAcrossTheThreshold(t *testing.T) {
	for _, n := range []int{1, 2, pairwiseKeys - 1, pairwiseKeys, pairwiseKeys + 1, 3 * pairwiseKeys} {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("key%d", i)
		}
		agreeWithOracle(t, objectOf(keys...))
		for _, variant := range []func(string) string{
			strings.ToUpper,
			func(s string) string { return s },
			func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "k", "\u212a"), "y", "Y") },
		} {
			for i := range n {
				for _, at := range []int{i + 1, n} { // right after it, and last
					with := append(append(append([]string(nil), keys[:at]...), variant(keys[i])), keys[at:]...)
					b := objectOf(with...)
					agreeWithOracle(t, b)
					if _, err := ReadObject(b, "params"); !errors.As(err, new(*KeyError)) {
						t.Fatalf("ReadObject(%s) = %v, want a KeyError", b, err)
					}
				}
			}
		}
	}
}

// TestSmallObjectKeyCheckAllocatesNothing: reading a small object strictly allocates only its
// keys that are not well known and its member list; the duplicate check itself nothing (it
// used to fold every key into a new string and a map).
func TestSmallObjectKeyCheckAllocatesNothing(t *testing.T) {
	b := []byte(`{"name":"echo","arguments":{},"_meta":{},"progressToken":1,"cursor":"x","uri":"u","task":{},"level":"debug"}`)
	// 8 keys, 4 of them well known: 4 strings; the member list made for 4 and grown to 8: 6.
	if n := testing.AllocsPerRun(20, func() {
		if _, err := readValidObject(b, "params"); err != nil {
			t.Fatal(err)
		}
	}); n > 6 {
		t.Errorf("reading an 8-key object allocates %v times, want at most 6", n)
	}
	// A message's envelope: only its member list.
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`)
	var o Object
	if n := testing.AllocsPerRun(20, func() {
		var err error
		if o, err = readValidObject(msg, "message"); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Errorf("reading a message's envelope allocates %v times, want 1", n)
	}
	for _, k := range []string{"jsonrpc", "id", "method", "params"} {
		if _, ok := o.Raw(k); !ok {
			t.Errorf("envelope read without %q", k)
		}
	}
	if m, _, err := o.String("method"); err != nil || m != "tools/call" {
		t.Errorf("method = %q, %v", m, err)
	}
}

// Each well-known string is itself, and nothing else is well known.
func TestWellKnownIsIdentity(t *testing.T) {
	for k, v := range wellKnownStrings {
		if k != v {
			t.Errorf("wellKnownStrings[%q] = %q", k, v)
		}
	}
	for _, s := range []string{"", "Jsonrpc", "id ", "tools/list", "io.modelcontextprotocol/protocolversion"} {
		if got, ok := wellKnown([]byte(s)); ok {
			t.Errorf("wellKnown(%q) = %q, want not known", s, got)
		}
	}
}

// FuzzReadObjectFoldOracle: the strict reader agrees with the folding map on every input.
func FuzzReadObjectFoldOracle(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"A":2}`, `{"k":1,"\u212a":2}`, `{"s":1,"\u017f":2}`, `{"ǅ":1,"ǆ":2}`, `{"ß":1,"ẞ":2}`,
		`{"σ":1,"ς":2}`, `{"Σ":1,"ς":2}`, `{"":1,"":2}`, `{"\ud800":1,"\ufffd":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { agreeWithOracle(t, b) })
}

// FuzzEqualFoldIsFold: strings.EqualFold(a, b) holds exactly when fold gives a and b one
// spelling, which is what lets the pairwise check stand in for the map.
func FuzzEqualFoldIsFold(f *testing.F) {
	for _, p := range [][2]string{{"a", "A"}, {"k", "\u212a"}, {"s", "\u017f"}, {"σ", "ς"}, {"ß", "ẞ"}, {"ǅ", "ǆ"},
		{"\xff", "\ufffd"}, {"\xed\xa0\x80", "\ufffd\ufffd\ufffd"}, {"", ""}, {"a", "ab"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if eq, same := strings.EqualFold(a, b), fold(a) == fold(b); eq != same {
			t.Fatalf("EqualFold(%q, %q) = %v, fold equal = %v (%q, %q)", a, b, eq, same, fold(a), fold(b))
		}
	})
}
