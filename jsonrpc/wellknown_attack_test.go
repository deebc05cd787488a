package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/internal/jsontext"
)

// Attacks on the table of well-known strings (wellKnownStrings): a key or value that is
// spelled so as to come near a table entry (escapes, case, invalid UTF-8, a prefix, an
// extension) must read exactly as encoding/json reads it, as the worker's SDK does, and
// the refusals of repeated and case-variant keys must still hold for table keys.

// tableNeighbours are JSON strings (quotes included) near the table's entries.
var tableNeighbours = []string{
	`"method"`, `"\u006dethod"`, `"metho\u0064"`, `"Method"`, `"METHOD"`, `"method "`, `" method"`,
	`"metho"`, `"methodx"`, `"method\u0000"`, `"method\u0000x"`, "\"method\xff\"", "\"\xffmethod\"",
	"\"meth\xc3od\"", `"method\ud800"`, `"tools/call"`, `"tools\/call"`, `"Tools/call"`, `"tools/call/"`,
	`"2.0"`, `"2.00"`, `"2\u002e0"`, `"io.modelcontextprotocol/protocolVersion"`,
	`"io.modelcontextprotocol/protocolversion"`, `"io.modelcontextprotocol\/protocolVersion"`,
	`"io.modelcontextprotocol/protocolVersionX"`, `"resultType"`, `"resultType` + strings.Repeat("x", 300) + `"`,
	`"re` + "\u017f" + `ultType"`, `"_meta"`, `"_META"`, `"\u005fmeta"`, `"id"`, `"ID"`, `"Id"`, `"i\u0064"`,
	`"nam` + "\u212a" + `"`, `"name"`, `""`,
}

// TestWellKnownReadsAsEncodingJSON: each neighbour, as a key and as a value, reads as
// encoding/json decodes it.
func TestWellKnownReadsAsEncodingJSON(t *testing.T) {
	for _, q := range tableNeighbours {
		var want string
		if err := json.Unmarshal([]byte(q), &want); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		raw := []byte(`{` + q + `:` + q + `}`)
		o, err := ReadObject(raw, "params")
		if err != nil {
			t.Errorf("ReadObject(%s): %v", raw, err)
			continue
		}
		if len(o.members) != 1 || o.members[0].key != want {
			t.Errorf("ReadObject(%s): key %q, encoding/json %q", raw, o.members[0].key, want)
		}
		if !bytes.Equal(o.members[0].rawKey, []byte(q)) {
			t.Errorf("ReadObject(%s): raw key %s, want the bytes as written", raw, o.members[0].rawKey)
		}
		if jsontext.HasLoneSurrogate([]byte(q)) {
			// Read as encoding/json reads it, but refused as a value gemgate decides on: a
			// worker in another language keeps the surrogate that encoding/json replaces.
			if _, _, err := o.String(want); err == nil {
				t.Errorf("ReadObject(%s).String(%q) took a lone surrogate escape", raw, want)
			}
			continue
		}
		if s, ok, err := o.String(want); err != nil || !ok || s != want {
			t.Errorf("ReadObject(%s).String(%q) = %q, %v, %v; want %q", raw, want, s, ok, err, want)
		}
	}
}

// TestWellKnownKeysStillRefusedTwice: a table key given twice, in escapes, or in another case
// (ASCII or a Unicode folding) is refused as before the table.
func TestWellKnownKeysStillRefusedTwice(t *testing.T) {
	for _, in := range []string{
		`{"jsonrpc":"2.0","method":"a","method":"b","id":1}`,
		`{"jsonrpc":"2.0","method":"a","\u006dethod":"b","id":1}`,
		`{"jsonrpc":"2.0","method":"a","METHOD":"b","id":1}`,
		`{"jsonrpc":"2.0","Method":"a","id":1}`,
		`{"jsonrpc":"2.0","jsonrpc":"2.0","method":"a","id":1}`,
		`{"jsonrpc":"2.0","method":"a","id":1,"iD":2}`,
		`{"jsonrpc":"2.0","method":"a","id":1,"params":{"name":"x","NAME":"y"}}`,
		`{"jsonrpc":"2.0","method":"a","id":1,"params":{"name":"x","nam\u0065":"y"}}`,
		`{"jsonrpc":"2.0","method":"a","id":1,"params":{"_meta":{},"_Meta":{}}}`,
		`{"jsonrpc":"2.0","method":"a","id":1,"params":{"progressToken":1,"progre` + "\u017f" + `sToken":2}}`,
	} {
		m, err := Parse([]byte(in), Options{Client: true})
		if err == nil {
			_, err = m.ParamsObject()
		}
		var ke *KeyError
		if !errors.As(err, &ke) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want a *KeyError", in, err)
		}
	}
}

// TestParseClientOwnedStringsOutliveTheBuffer: the decoded method and keys, table strings or
// not, are the message's own: a caller that writes over the buffer it handed over (which it
// must not, but a bug would) cannot change them. Raw fields do alias it, by contract.
func TestParseClientOwnedStringsOutliveTheBuffer(t *testing.T) {
	for _, method := range []string{"tools/call", "tools/list", "resources/read"} {
		buf := []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"name":"echo","x":"y"}}`)
		m, err := Parse(buf, Options{Client: true, Owned: true})
		if err != nil {
			t.Fatal(err)
		}
		p, err := m.ParamsObject()
		if err != nil {
			t.Fatal(err)
		}
		for i := range buf {
			if buf[i] >= 'a' && buf[i] <= 'z' {
				buf[i] = 'q'
			}
		}
		if m.Method != method {
			t.Errorf("method %q after the buffer was overwritten, want %q", m.Method, method)
		}
		if p.members[0].key != "name" || p.members[1].key != "x" {
			t.Errorf("params keys %q %q after the buffer was overwritten", p.members[0].key, p.members[1].key)
		}
	}
}
