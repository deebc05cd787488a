package sessionless

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gemgate/gemgate/gateway/wire"
)

// passResults are worker results: plain ones, input-required ones, and ones that spell
// resultType in ways encoding/json still reads as that name (escapes, case, Unicode folding),
// or mention it only in a value.
var passResults = []string{
	`{"content":[{"type":"text","text":"hello"}]}`,
	` {"content":[]}`,
	`{"content":[{"type":"text","text":"grüße, 日本"}]}`,
	`{"resultType":"complete","content":[]}`,
	`{"resultType":"input_required","inputRequests":{"a":{}},"requestState":"s"}`,
	`{"resultType":"input_required","inputRequests":{"a":{}}}`,
	`{"result\u0054ype":"input_required","inputRequests":{},"requestState":"s"}`,
	`{"RESULTTYPE":"input_required","inputRequests":{},"requestState":"s"}`,
	`{"resulttype":"input_required"}`,
	`{"reſultType":"input_required"}`,
	`{"content":[{"type":"text","text":"resultType"}]}`,
	`{"content":[{"type":"text","text":"a \"quoted\" word"}]}`,
	`[]`,
	`"text"`,
	`{"a":"resultTyp","b":"esultType"}`,
	`{"x":{"resultType":"input_required"}}`,
}

// oldResultTypeOf and oldWrapsNothing are what the fast path stands in for: the decoding.
func oldResultTypeOf(result json.RawMessage) string {
	var r struct {
		ResultType string `json:"resultType"`
	}
	_ = json.Unmarshal(result, &r)
	return r.ResultType
}

func oldWrapsNothing(result json.RawMessage) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal(result, &fields) != nil {
		return false // an error
	}
	_, has := fields["resultType"]
	return !has
}

// TestResultKeySkipAgrees: whenever the byte scan says a result has no resultType, decoding it
// finds none either, by the exact name or by encoding/json's folding; and the scan does say
// so for the plain results that make up nearly every answer.
func TestResultKeySkipAgrees(t *testing.T) {
	for _, r := range passResults {
		raw := json.RawMessage(r)
		if !json.Valid(raw) {
			t.Fatalf("test result %s is not JSON", r)
		}
		skip := !wire.MayHaveKey(raw, "resultType")
		if skip && oldResultTypeOf(raw) != "" {
			t.Errorf("%s: skipped, but it decodes to resultType %q", r, oldResultTypeOf(raw))
		}
		if skip && wire.IsObject(raw) && !oldWrapsNothing(raw) {
			t.Errorf("%s: skipped, but its resultType member would be looked at", r)
		}
		if got, want := resultTypeOf(raw), oldResultTypeOf(raw); got != want {
			t.Errorf("resultTypeOf(%s) = %q, want %q", r, got, want)
		}
	}
	for _, r := range passResults[:3] {
		if wire.MayHaveKey(json.RawMessage(r), "resultType") {
			t.Errorf("%s: a plain result is decoded to look for resultType", r)
		}
	}
}

// TestWrapInputRequiredPassesPlainResults: a result that is not input-required comes back as
// the very bytes it was, and a non-object result is still an error.
func TestWrapInputRequiredPassesPlainResults(t *testing.T) {
	a := New(Config{})
	for _, r := range []string{passResults[0], passResults[2], passResults[3], passResults[10]} {
		got, err := a.wrapInputRequired(stateClaims{}, json.RawMessage(r))
		if err != nil || string(got) != r {
			t.Errorf("wrapInputRequired(%s) = %s, %v; want it unchanged", r, got, err)
		}
	}
	for _, r := range []string{`[]`, `"text"`} {
		if _, err := a.wrapInputRequired(stateClaims{}, json.RawMessage(r)); err == nil {
			t.Errorf("wrapInputRequired(%s): no error", r)
		}
	}
	got, err := a.wrapInputRequired(stateClaims{}, json.RawMessage(passResults[4]))
	if err != nil || strings.Contains(string(got), `"requestState":"s"`) {
		t.Errorf("an input-required result's state is not wrapped: %s, %v", got, err)
	}
}

// TestResultTypeSkipAllocs: a plain megabyte result is not decoded to learn it has no
// resultType.
func TestResultTypeSkipAllocs(t *testing.T) {
	raw := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 1<<20) + `"}]}`)
	if n := testing.AllocsPerRun(5, func() {
		if resultTypeOf(raw) != "" {
			t.Fatal("resultType")
		}
	}); n != 0 {
		t.Fatalf("%.0f allocations to read a plain result's resultType, want 0", n)
	}
}

// FuzzResultTypeOfAgrees: resultTypeOf reads a result's resultType as encoding/json does, for
// every result a worker's message can carry (valid JSON in valid UTF-8, as the parser
// guarantees).
func FuzzResultTypeOfAgrees(f *testing.F) {
	for _, r := range passResults {
		f.Add(r)
	}
	for _, r := range []string{
		`{"resultType":null}`, `{"resultType":1}`, `{"resultType":{"a":1}}`, `{"resultType":"\u0063omplete"}`,
		`{"resultType":"a","RESULTTYPE":"b"}`, `{"RESULTTYPE":"b","resultType":"a"}`, `{"resultType":"a","resultType":"b"}`,
		`{"content":[],"resultType":"complete","structuredContent":{"resultType":"x"}}`, `{"resultType":"\ud800"}`,
	} {
		f.Add(r)
	}
	f.Fuzz(func(t *testing.T, r string) {
		raw := json.RawMessage(r)
		if !json.Valid(raw) || !utf8.ValidString(r) {
			return
		}
		if got, want := resultTypeOf(raw), oldResultTypeOf(raw); got != want {
			t.Errorf("resultTypeOf(%s) = %q, encoding/json reads %q", r, got, want)
		}
	})
}

// FuzzReviewResultKeySkip: a hostile worker spells resultType any way it likes (escapes, case,
// Unicode folding, invalid UTF-8, nested, as a value): whenever the byte scan lets a result
// pass undecoded, decoding it would have found no resultType, by encoding/json's folding nor
// by the exact name.
func FuzzReviewResultKeySkip(f *testing.F) {
	for _, r := range passResults {
		f.Add([]byte(r))
	}
	f.Add([]byte("{\"result\xffype\":\"input_required\"}"))
	f.Add([]byte(`{"re\u017fultType":"input_required"}`))
	f.Add([]byte(`{"a":"\"","resultType":"input_required"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) || wire.MayHaveKey(b, "resultType") {
			return
		}
		var folded struct {
			ResultType *json.RawMessage `json:"resultType"`
		}
		if json.Unmarshal(b, &folded) == nil && folded.ResultType != nil {
			t.Fatalf("%q: skipped, but it decodes to resultType %s", b, *folded.ResultType)
		}
		if wire.IsObject(b) && !oldWrapsNothing(b) {
			t.Fatalf("%q: skipped, but its resultType member would be looked at", b)
		}
	})
}
