package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// mapMember is what lastMember stands in for: decoding into a map and looking key up.
func mapMember(obj []byte, key string) (json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(obj, &fields) != nil {
		return nil, false
	}
	v, ok := fields[key]
	return v, ok
}

// FuzzLastMemberAgreesWithMap: for every JSON object, lastMember finds the value the map
// finds (repeats, escapes, case variants and ill-formed UTF-8 in keys included), and
// decodesTo says what decoding the value says.
func FuzzLastMemberAgreesWithMap(f *testing.F) {
	for _, r := range []string{`{"content":[]}`, `{"resultType":"input_required","inputRequests":{"a":{}}}`,
		`{"RESULTTYPE":"input_required"}`, `{"reſultType":"input_required"}`, `{"x":{"resultType":"input_required"}}`} {
		f.Add([]byte(r))
	}
	for _, s := range []string{`{"resultType":"a","resultType":"input_required"}`, `{"resultType":"input_required","resultType":1}`,
		`{ "resultType" : "input\u005frequired" }`, `{"resultType\u0000":"input_required"}`, "{\"resultType\xff\":1}",
		`{"resultType":null}`, `{"resultType":"input_required\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) || !IsObject(b) {
			return
		}
		got, ok := LastMember(b, "resultType")
		want, wantOK := mapMember(b, "resultType")
		if ok != wantOK || !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
			t.Fatalf("LastMember(%q) = %q %v, the map %q %v", b, got, ok, want, wantOK)
		}
		if ok && got[0] == '"' {
			var s string
			if err := json.Unmarshal(got, &s); err != nil || DecodesTo(got, "input_required") != (s == "input_required") {
				t.Fatalf("DecodesTo(%q) = %v, decoded %q (%v)", got, DecodesTo(got, "input_required"), s, err)
			}
		}
	})
}

// Every 2026-07-28 answer names its resultType, so LastMember and LastFoldedString run on
// every sessionless call: they find it without decoding the answer (decoding a small echo
// answer into a map twice cost the sessionless call 15 % of the gateway's CPU,
// docs/PERFORMANCE.md).
func TestResultTypeLookupDecodesNothing(t *testing.T) {
	obj := []byte(`{"content":[{"type":"text","text":"hi"}],"isError":false,"resultType":"complete"}`)
	n := testing.AllocsPerRun(100, func() {
		if v, ok := LastMember(obj, "resultType"); !ok || string(v) != `"complete"` {
			t.Fatalf("LastMember = %q %v", v, ok)
		}
		if s := LastFoldedString(obj); s != "complete" {
			t.Fatalf("LastFoldedString = %q", s)
		}
	})
	// None but a pooled decoder now and then (the race detector's sync.Pool drops some);
	// decoding the answer into a map and a struct took 22.
	if n > 4 {
		t.Errorf("the lookups allocate %v times, want none", n)
	}
}
