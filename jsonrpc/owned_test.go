package jsonrpc

import (
	"bytes"
	"testing"
)

const ownedMessage = ` {"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}} `

// Parse keeps a copy unless told the bytes are its own: a caller that reuses its read buffer
// for the next line cannot change a message already parsed from it.
func TestParseKeepsACopy(t *testing.T) {
	for name, opts := range map[string]Options{"worker": {}, "client": {Client: true}} {
		buf := []byte(ownedMessage)
		m, err := Parse(buf, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := range buf {
			buf[i] = 'x'
		}
		if string(m.ID) != `"c-1"` || m.Method != "tools/call" || string(m.Params) != `{"name":"echo","arguments":{"text":"hi"}}` {
			t.Errorf("%s: after the buffer was reused the message reads id %s method %q params %s", name, m.ID, m.Method, m.Params)
		}
		if _, err := m.ParamsObject(); err != nil {
			t.Errorf("%s: ParamsObject after the buffer was reused: %v", name, err)
		}
	}
}

// Parse of a client's Owned bytes keeps them it is handed: its fields are slices of them, no copy made.
func TestParseClientOwnedKeepsTheBytes(t *testing.T) {
	buf := []byte(ownedMessage)
	m, err := Parse(buf, Options{Client: true, Owned: true})
	if err != nil {
		t.Fatal(err)
	}
	within := func(field []byte) bool { // field is the very bytes of buf where it is written
		i := bytes.Index(buf, field)
		return len(field) > 0 && i >= 0 && &buf[i] == &field[0]
	}
	if !within(m.ID) || !within(m.Params) {
		t.Errorf("ParseClientOwned copied the body: id at %p, params at %p, body at %p", m.ID, m.Params, buf)
	}
	if !bytes.Equal(m.Params, []byte(`{"name":"echo","arguments":{"text":"hi"}}`)) {
		t.Errorf("params %s", m.Params)
	}
}
