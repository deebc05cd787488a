package jsonrpc

import (
	"bytes"
	"testing"
)

// Parse of Owned bytes keeps them, and otherwise reads exactly as Parse of bytes it copies:
// the same message or the same refusal.
func TestParseOwnedIsParseWithoutTheCopy(t *testing.T) {
	buf := []byte(`{"jsonrpc":"2.0","id":7,"result":{"text":"hi"}}`)
	m, err := Parse(buf, Options{Owned: true})
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.Index(buf, m.Result); i < 0 || &buf[i] != &m.Result[0] {
		t.Errorf("ParseOwned copied the line: result at %p, line at %p", m.Result, buf)
	}
	for _, in := range []string{
		ownedMessage,
		`{"jsonrpc":"2.0","id":7,"result":{"text":"hi"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":1}}`,
		`{"jsonrpc":"2.0","id":7,"result":{},"error":{}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"a":1,"a":2}}`,
		`{"jsonrpc":"1.0","id":7,"result":{}}`,
		`[{"jsonrpc":"2.0","id":7,"result":{}}]`,
		`{"jsonrpc":"2.0","id":7,"result":{"text":"caf` + "\xe9" + `"}}`,
		`{"jsonrpc":"2.0","id":7,`,
		``,
	} {
		want, wantErr := Parse([]byte(in), Options{})
		got, gotErr := Parse([]byte(in), Options{Owned: true})
		if (wantErr == nil) != (gotErr == nil) || wantErr != nil && gotErr.Error() != wantErr.Error() {
			t.Errorf("%q: error %v, Parse's %v", in, gotErr, wantErr)
			continue
		}
		if wantErr == nil && !bytes.Equal(got.Encode(), want.Encode()) {
			t.Errorf("%q: %s, Parse's %s", in, got.Encode(), want.Encode())
		}
	}
}
