package jsonrpc

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The duplicate check of the strict reader compares a small object's keys pairwise with
// strings.EqualFold and folds only a large object's keys into a map. The check as it was,
// every key folded into a map, over encoding/json's own reading of the keys, is kept here as
// the oracle the reader must agree with.

// foldingMap is the KeyError of the first key that repeats an earlier one without regard to
// case (fold), looked up in a map; nil when there is none.
func foldingMap(keys []string) error {
	seen := map[string]string{}
	for _, k := range keys {
		f := fold(k)
		if other, dup := seen[f]; dup {
			return &KeyError{Object: "params", Key: k, Other: other}
		}
		seen[f] = k
	}
	return nil
}

// agreeWithOracle fails t unless ReadObject and the oracle read b alike: the same error, or
// the same members.
func agreeWithOracle(t *testing.T, b []byte) {
	t.Helper()
	got, err := ReadObject(b, "params")
	keys, values, refErr := referenceObject(b)
	if refErr != nil {
		return // refused before the keys are read (FuzzReadObject holds ReadObject to that)
	}
	wantErr := foldingMap(keys)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) || reflect.TypeOf(err) != reflect.TypeOf(wantErr) {
		t.Fatalf("ReadObject(%q) = %v, the folding map said %v", b, err, wantErr)
	}
	var ke, wantKE *KeyError
	if errors.As(err, &ke) && errors.As(wantErr, &wantKE) && *ke != *wantKE {
		t.Fatalf("ReadObject(%q) = %+v, the folding map said %+v", b, *ke, *wantKE)
	}
	if err != nil {
		return
	}
	if len(got.members) != len(keys) {
		t.Fatalf("ReadObject(%q) has %d members, encoding/json %d", b, len(got.members), len(keys))
	}
	for i, m := range got.members {
		if m.key != keys[i] || !sameJSON(m.value, values[i]) {
			t.Fatalf("ReadObject(%q) member %d = %q: %s, encoding/json %q: %s", b, i, m.key, m.value, keys[i], values[i])
		}
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

// TestSmallObjectKeyCheckAllocatesNothing: the duplicate check of a small object allocates
// nothing (it used to fold every key into a new string and a map).
func TestSmallObjectKeyCheckAllocatesNothing(t *testing.T) {
	b := []byte(`{"name":"echo","arguments":{},"_meta":{},"progressToken":1,"cursor":"x","uri":"u","task":{},"level":"debug"}`)
	members, _, _, err := readText(b, 0, descendNone)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() {
		if _, err := newObject("params", members); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("checking an 8-key object's keys allocates %v times, want none", n)
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
		if got, ok := wellKnownStrings[s]; ok {
			t.Errorf("wellKnownStrings[%q] = %q, want not known", s, got)
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
