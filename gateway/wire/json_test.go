package wire

import (
	"encoding/json"
	"testing"
)

// FuzzDecodesToAgreesWithDecoding: for every JSON string (escapes, surrogates and ill-formed
// UTF-8 included), DecodesTo says what decoding it says.
func FuzzDecodesToAgreesWithDecoding(f *testing.F) {
	for _, s := range []string{`"input_required"`, `"input\u005frequired"`, `"input_required\ud800"`,
		"\"input_required\xff\"", `"INPUT_REQUIRED"`, `""`, `"task"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) || len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
			return
		}
		var s string
		if err := json.Unmarshal(b, &s); err != nil || DecodesTo(b, "input_required") != (s == "input_required") {
			t.Fatalf("DecodesTo(%q) = %v, decoded %q (%v)", b, DecodesTo(b, "input_required"), s, err)
		}
	})
}

// Every 2026-07-28 answer names its resultType, so LastFoldedString runs on every sessionless
// call: it finds it without decoding the answer (decoding a small echo answer into a map twice
// cost the sessionless call 15 % of the gateway's CPU, docs/PERFORMANCE.md).
func TestResultTypeLookupDecodesNothing(t *testing.T) {
	obj := []byte(`{"content":[{"type":"text","text":"hi"}],"isError":false,"resultType":"complete"}`)
	n := testing.AllocsPerRun(100, func() {
		if s := LastFoldedString(obj); s != "complete" {
			t.Fatalf("LastFoldedString = %q", s)
		}
	})
	// None but a pooled decoder now and then (the race detector's sync.Pool drops some);
	// decoding the answer into a map and a struct took 22.
	if n > 4 {
		t.Errorf("the lookup allocates %v times, want none", n)
	}
}
