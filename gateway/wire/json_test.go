package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecodesToAgreesWithDecoding: for every JSON string (escapes, surrogates and ill-formed
// UTF-8 included), DecodesTo says what decoding it says.
func FuzzDecodesToAgreesWithDecoding(f *testing.F) {
	for _, s := range []string{`"input_required"`, `"input\u005frequired"`, `"input_required\ud800"`,
		"\"input_required\xff\"", `"INPUT_REQUIRED"`, `""`, `"task"`, `"\u0069nput_required"`} {
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

// TestMayHaveKey: false only when encoding/json would find no member read as the key: not
// exactly, not in another case, not spelled with escapes, not through a rune that folds to
// ASCII (U+017F ſ folds to s). Strings in values count too (it may say true in vain, never
// false in vain); an escaped quote does not end a string.
func TestMayHaveKey(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want bool
	}{
		{`{"resultType":"complete"}`, true},
		{`{"RESULTTYPE":1}`, true},
		{`{"result\u0054ype":1}`, true},
		{`{"\u0072esultType":1}`, true}, // an escape first
		{`{"":1,"a":""}`, false},
		{`{"re\u017fultType":1}`, true},
		{`{"reſultType":1}`, true},
		{`{"a":"resultType"}`, true},
		{`{"a":"x\"resultType"}`, false}, // the string is x"resultType, not the key
		{`{"content":[],"isError":false}`, false},
		{`{"resultTyp":1,"resultTypes":1}`, false},
		{`{"a":"\"","b":"resultTypo"}`, false},
		{`{"a":"x\\","b":1}`, false},
		{`{"result\u0054ypo":1}`, false},
		{`{"` + strings.Repeat(`\u0041`, 10) + `":1}`, false}, // too long escaped to be the key
		{`{}`, false},
		{`"resultType`, true}, // no closing quote: not JSON, the decoder is to say what it is
	} {
		if got := MayHaveKey([]byte(tt.raw), "resultType"); got != tt.want {
			t.Errorf("MayHaveKey(%s) = %v, want %v", tt.raw, got, tt.want)
		}
	}
	// Every ASCII letter folds, A and Z too; the characters either side of them do not.
	for raw, want := range map[string]bool{`{"AZ":1}`: true, `{"aZ":1}`: true, `{"Az":1}`: true, `{"@Z":1}`: false, `{"A[":1}`: false} {
		if got := MayHaveKey([]byte(raw), "az"); got != want {
			t.Errorf("MayHaveKey(%s, az) = %v, want %v", raw, got, want)
		}
	}
}

// TestLastFoldedString: the resultType a struct decoding reads: the last string member whose
// key folds to it, escapes decoded; a member of another type or another key is not it.
func TestLastFoldedString(t *testing.T) {
	for _, tt := range []struct{ obj, want string }{
		{`{"resultType":"complete"}`, "complete"},
		{`{"resultType":"input_required"}`, "input_required"},
		{`{"resultType":"complete","RESULTTYPE":"input_required"}`, "input_required"},
		{`{"ResultType":"input_required","resultType":"complete"}`, "complete"},
		{`{"result\u0054ype":"input\u005frequired"}`, "input_required"},
		{`{"\u0072esultType":"\u0069nput_required"}`, "input_required"}, // escapes first
		{`{"re\u017fultType":"task"}`, "task"},
		{`{"reſultType":"task"}`, "task"},
		{`{"resultType":"complete","resultType":7}`, "complete"},
		{`{"resultTypes":"complete"}`, ""},
		{`{"resultTyp":"complete"}`, ""},
		{`{"` + strings.Repeat(`\u0041`, 10) + `":"complete"}`, ""},
		{`{"content":[]}`, ""},
		{`{"resultType":"other"}`, "other"},
		{`[1]`, ""},
	} {
		if got := LastFoldedString([]byte(tt.obj)); got != tt.want {
			t.Errorf("LastFoldedString(%s) = %q, want %q", tt.obj, got, tt.want)
		}
	}
}

// TestAddMember: a member is appended to an empty object and after others, as valid JSON.
func TestAddMember(t *testing.T) {
	for _, tt := range []struct{ obj, want string }{
		{`{}`, `{"k":1}`},
		{`{"a":2}`, `{"a":2,"k":1}`},
	} {
		if got := string(AddMember([]byte(tt.obj), "k", "1")); got != tt.want {
			t.Errorf("AddMember(%s) = %s, want %s", tt.obj, got, tt.want)
		}
	}
	for _, tt := range []struct {
		raw  string
		want bool
	}{{`{}`, true}, {" \n\t{\"a\":1}", true}, {`[]`, false}, {`"{"`, false}, {`  `, false}, {`null`, false}} {
		if got := IsObject([]byte(tt.raw)); got != tt.want {
			t.Errorf("IsObject(%q) = %v, want %v", tt.raw, got, tt.want)
		}
	}
}
