package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// jsonMaxDepth is encoding/json's nesting limit: its Valid refuses a value nested deeper.
const jsonMaxDepth = 10000

// validSeeds are the edges of what the reader decides, for the table test and as the
// fuzz targets' seeds.
var validSeeds = []string{
	// Messages.
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"x"}],"isError":false}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"m"}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"m"}]`, `[]`, `{}`, `[1,]`, `{"a":1,}`, `{,}`, `[,1]`,
	// Escapes, lone surrogates among them: valid JSON, and not UTF-8 to check.
	`{"jsonrpc":"2.0","id":"\ud800","method":"m"}`, `{"jsonrpc":"2.0","id":"\udfff\ud800x","method":"m"}`,
	`{"jsonrpc":"2.0","id":"\uD83D\uDE00","method":"m"}`, `{"jsonrpc":"2.0","id":"\/\b\f\n\r\t\"\\","method":"m"}`,
	`{"a":"\u12"}`, `{"a":"\u00zz"}`, `{"a":"\a"}`, `{"a":"\x41"}`, `{"a":"\U0041"}`, `{"a":"\`, `{"a":"\u`, `{"a":"\u004`,
	// Bytes in strings: controls, DEL, and UTF-8 well- and ill-formed.
	"{\"a\":\"\x01\"}", "{\"a\":\"\x1f\"}", "{\"a\":\"\x7f\"}", "{\"a\":\"\t\"}", "{\"a\":\"\n\"}",
	"{\"a\":\"é€😀\"}", "{\"a\":\"\xef\xbf\xbd\"}", "{\"a\":\"\xff\"}", "{\"a\":\"\xc0\xaf\"}", "{\"a\":\"\xed\xa0\x80\"}",
	"{\"a\":\"\xf4\x8f\xbf\xbf\"}", "{\"a\":\"\xf4\x90\x80\x80\"}", "{\"a\":\"\xe2\x82\"}", "{\"a\":\"\xe2\x82", "{\"\xff\":1}",
	"{\"a\":\"x\"}\xff", "\xff{}", "{\"a\":1\xff}", "{\"a\":tru\xff}", "{\"a\":[}\xff\"", "{\"a\":\"\x01\xff\"}",
	// Numbers.
	`{"a":0}`, `{"a":-0}`, `{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":.5}`, `{"a":1.5e}`, `{"a":1e+}`, `{"a":1E-7}`,
	`{"a":+1}`, `{"a":1e999999}`, `{"a":123456789012345678901234567890.5e-400}`, `{"a":0x10}`, `{"a":1.5.3}`,
	`{"a":NaN}`, `{"a":Infinity}`, `{"a":-Infinity}`, `{"a":--1}`, `{"a":0.0e0}`, `1`, `-`, `"s"`,
	// Every hex digit's edge in an escape.
	`{"a":"\u09aA\ufFfF\u0Af9"}`, `{"a":"\u00g0"}`, `{"a":"\u00G0"}`, `{"a":"\u00/0"}`, `{"a":"\u00:0"}`, `{"a":"\u00` + "`" + `0"}`, `{"a":"\u00@0"}`,
	// Cut short at the very end.
	`1e`, `0E`, `1e+`, `-1.`, `tru`, `[fals`, `{"a":nul`, `t`, `f`, `n`, `x`,
	// One level an object, then an array, and the reverse.
	`[{},[1,2]]`, `{"a":{"b":1},"c":[1,2]}`, `[[1],{"a":1,"b":2}]`, `{"a":[],"b":{"c":1,"d":2}}`,
	// Literals.
	`{"a":true}`, `{"a":false}`, `{"a":null}`, `{"a":tru}`, `{"a":truex}`, `{"a":nul}`, `{"a":True}`, `true`, `null`,
	// Structure and trailing bytes.
	`{"a" 1}`, `{"a"::1}`, `{1:2}`, `{"a":1 "b":2}`, `{"a":1}}`, `{"a":1}x`, `{"a":1} {}`, `{"a":[1,2]]`,
	`{"a":[1,2}`, `{"a":{"b":[]}}`, `{"a":`, `{`, `[`, `{"a":1`, `{"a":1,`, `{"a":[`, ``, ` `, `{}{}`,
	// White space: JSON's four, and others (Unicode's) that must not be taken for it.
	" \t\r\n{ \t\r\n\"a\" \t\r\n: \t\r\n[ \t\r\n1 \t\r\n, \t\r\n2 \t\r\n] \t\r\n} \t\r\n",
	"\v{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}", "\f{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\f",
	"\u00a0{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\u2028", "\u0085{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}",
	"{\v\"a\":1}", "{\"a\":1\f}", "{\u00a0\"a\":1}", "\x00{}", "{}\x00",
	// Nesting: MaxDepth, one past it, and encoding/json's own limit.
	nestedMessage(MaxDepth), nestedMessage(MaxDepth + 1), nestedMessage(jsonMaxDepth), nestedMessage(jsonMaxDepth + 1),
	strings.Repeat("[", jsonMaxDepth) + strings.Repeat("]", jsonMaxDepth),
	strings.Repeat("[", jsonMaxDepth+1) + strings.Repeat("]", jsonMaxDepth+1),
	strings.Repeat(`{"a":`, MaxDepth+1) + `1` + strings.Repeat(`}`, MaxDepth),
	nestedMessage(MaxDepth+1) + "\xff", nestedMessage(MaxDepth+1) + "x",
}

// nestedMessage is a request nesting levels deep: the envelope is level 1, params level 2.
func nestedMessage(levels int) string {
	inner := strings.Repeat(`{"a":[`, (levels-2)/2) + strings.Repeat("[", (levels-2)%2) +
		strings.Repeat("]", (levels-2)%2) + strings.Repeat(`]}`, (levels-2)/2)
	return `{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":` + inner + `}}`
}

// checkParse holds Parse, ParseClient, ParseClientOwned and ReadObject to the old checks on b:
// the same error, or the same message.
func checkParse(t *testing.T, b []byte) {
	t.Helper()
	m, err := Parse(b, Options{})
	wantM, wantErr := oldParse(b)
	sameResult(t, "Parse", b, m, err, wantM, wantErr)

	m, err = Parse(b, Options{Client: true})
	wantM, wantErr = oldParseClient(b)
	sameResult(t, "ParseClient", b, m, err, wantM, wantErr)

	m, err = Parse(slices.Clone(b), Options{Client: true, Owned: true})
	sameResult(t, "ParseClientOwned", b, m, err, wantM, wantErr)
	if err == nil && !json.Valid(b) {
		t.Fatalf("Parse(%.200q, Options{Client: true}) took for a message what encoding/json says is no JSON", b)
	}

	o, err := ReadObject(b, "params")
	wantO, wantErr := oldReadObject(b, "params")
	if err := sameError(err, wantErr); err != nil {
		t.Fatalf("ReadObject(%.200q): %v", b, err)
	}
	if fmt.Sprint(o) != fmt.Sprint(wantO) {
		t.Fatalf("ReadObject(%.200q) = %v, the old checks %v", b, o, wantO)
	}
}

func sameResult(t *testing.T, name string, b []byte, m *Message, err error, wantM *Message, wantErr error) {
	t.Helper()
	if err := sameError(err, wantErr); err != nil {
		t.Fatalf("%s(%.200q): %v", name, b, err)
	}
	if (m == nil) != (wantM == nil) {
		t.Fatalf("%s(%.200q) = %+v, the old checks %+v", name, b, m, wantM)
	}
	if m == nil {
		return
	}
	if !bytes.Equal(m.ID, wantM.ID) || m.Method != wantM.Method || !bytes.Equal(m.Params, wantM.Params) ||
		!bytes.Equal(m.Result, wantM.Result) || !bytes.Equal(m.Error, wantM.Error) ||
		(m.ID == nil) != (wantM.ID == nil) || (m.Params == nil) != (wantM.Params == nil) ||
		(m.Result == nil) != (wantM.Result == nil) || (m.Error == nil) != (wantM.Error == nil) ||
		(m.paramsRead == nil) != (wantM.paramsRead == nil) || m.paramsSum != wantM.paramsSum {
		t.Fatalf("%s(%.200q) = %+v, the old checks %+v", name, b, m, wantM)
	}
}

// sameError: both nil, or the same text, type and sentinel.
func sameError(got, want error) error {
	switch {
	case got == nil && want == nil:
		return nil
	case got == nil || want == nil:
		return fmt.Errorf("error %v, the old checks %v", got, want)
	case got.Error() != want.Error() || fmt.Sprintf("%T", got) != fmt.Sprintf("%T", want) ||
		errors.Is(got, ErrParse) != errors.Is(want, ErrParse) || errors.Is(got, ErrInvalid) != errors.Is(want, ErrInvalid):
		return fmt.Errorf("error %v (%T), the old checks %v (%T)", got, got, want, want)
	}
	return nil
}

// TestParseEdges: each edge decides as the old checks did, and as the outcome written here.
func TestParseEdges(t *testing.T) {
	for _, s := range validSeeds {
		checkParse(t, []byte(s))
	}
	tests := []struct {
		in   string
		want error // nil: parsed; else what Parse's error must be (errors.Is)
	}{
		{`{"jsonrpc":"2.0","id":"\ud800","method":"m"}`, nil},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"\xed\xa0\x80\",\"method\":\"m\"}", errNotUTF8},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"m\"}", errNotUTF8},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\xff", errNotUTF8},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",}\xff", errNotUTF8}, // the syntax fails first
		// Only JSON's own white space may wrap a message: others make it no JSON (encoding/json,
		// the worker's SDK and a proxy reading the body all refuse it).
		{" \t\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"} \t\r\n", nil},
		{"\v{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}", ErrParse},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\f", ErrParse},
		{"\u00a0{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\u2028", ErrParse},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"\v}", ErrParse},
		{`{"jsonrpc":"2.0","id":1,"method":"m"}x`, ErrParse},
		{`{"jsonrpc":"2.0","id":123456789012345678901234567890e999999,"method":"m"}`, nil},
		{`{"jsonrpc":"2.0","id":01,"method":"m"}`, ErrParse},
		{nestedMessage(MaxDepth), nil},
		{nestedMessage(MaxDepth + 1), errTooDeep},
		{nestedMessage(jsonMaxDepth), errTooDeep},
		{nestedMessage(jsonMaxDepth + 1), ErrParse}, // past encoding/json's limit: not JSON to it
		{nestedMessage(MaxDepth+1) + "x", ErrParse},
		{strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), errTooDeep},
		{`[{"jsonrpc":"2.0","id":1,"method":"m"}]`, ErrInvalid},
	}
	for _, tt := range tests {
		m, err := Parse([]byte(tt.in), Options{Client: true})
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("Parse(%.80q, Options{Client: true}) = %v, want a message", tt.in, err)
		case tt.want != nil && (!errors.Is(err, tt.want) || tt.want == ErrParse && errors.Is(err, errNotUTF8)):
			t.Errorf("Parse(%.80q, Options{Client: true}) = %+v, %v; want %v", tt.in, m, err, tt.want)
		}
	}
}

// TestParseEveryOffset: each byte of a string that needs a look is found wherever it sits,
// and wherever the string ends.
func TestParseEveryOffset(t *testing.T) {
	specials := []string{`"`, `\\`, `\"`, `\u0041`, `\x`, "\x00", "\x1f", " ", "\x7f", "\x80", "é", "\xff", "😀", "\xf0\x9f\x98", `\`}
	for _, sp := range specials {
		for before := 0; before < 20; before++ {
			for after := 0; after < 10; after++ {
				s := `{"a":"` + strings.Repeat("x", before) + sp + strings.Repeat("y", after) + `"}`
				checkParse(t, []byte(s))
				checkParse(t, []byte(s[:len(s)-2])) // the string never ends
			}
		}
	}
}

// FuzzParseAgrees: Parse, ParseClient, ParseClientOwned and ReadObject give what the old
// checks gave (oracle_test.go): the same error, text and type, or the same message; and what
// ParseClient takes for a message is JSON to encoding/json.
func FuzzParseAgrees(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkParse(t, b) })
}
