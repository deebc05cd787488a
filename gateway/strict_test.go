package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// The gateway must read a message as the worker will. encoding/json matched "Name" for
// "name" and kept the last of repeated keys, so {"name":"write_note","Name":"read_note"} was
// approved and audited as read_note while the worker (the go-sdk matches keys exactly) ran
// write_note. Every ambiguous message is refused with -32600 before anything is forwarded.
func TestAmbiguousMessagesAreRefused(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-ro")
	c.open()
	tests := []struct {
		name, body string
		id         string // the id the refusal carries; "" for none
	}{
		{"tool name and a case variant", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"write_note","Name":"read_note","arguments":{"name":"pwned","text":"x"}}}`, "11"},
		{"tool name twice", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"write_note","name":"read_note","arguments":{"name":"pwned","text":"x"}}}`, "12"},
		{"tool name escaped twice", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"write_note","n\u0061me":"read_note","arguments":{"name":"pwned","text":"x"}}}`, "13"},
		{"tool name only in another case", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"NAME":"read_note","arguments":{}}}`, "14"},
		{"arguments twice", `{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"read_note","arguments":{"name":"a"},"Arguments":{"name":"b"}}}`, "15"},
		{"method in another case", `{"jsonrpc":"2.0","id":16,"Method":"tools/call","params":{"name":"write_note"}}`, ""},
		{"method twice", `{"jsonrpc":"2.0","id":17,"method":"tools/list","method":"tools/call","params":{"name":"write_note"}}`, ""},
		{"params twice", `{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"read_note"},"params":{"name":"write_note"}}`, ""},
		{"_meta twice", `{"jsonrpc":"2.0","id":19,"method":"tools/list","params":{"_meta":{},"_META":{"progressToken":1}}}`, "19"},
		{"progress token in another case", `{"jsonrpc":"2.0","id":20,"method":"tools/list","params":{"_meta":{"progresstoken":1}}}`, "20"},
		{"cancel id twice", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"requestID":2}}`, ""},
		{"protocol version in another case", `{"jsonrpc":"2.0","id":21,"method":"initialize","params":{"protocolVersion":"2025-06-18","ProtocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`, "21"},
		{"capabilities with a repeat", `{"jsonrpc":"2.0","id":22,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{},"Roots":{}},"clientInfo":{"name":"x","version":"0"}}}`, "22"},
		{"1000 deep", `{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"echo","arguments":{"text":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}}`, ""},
	}
	forwarded := strings.Count(f.log.String(), `"direction":"to_worker"`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.post(tt.body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400; body %s", r.status, r.body)
			}
			m := r.only(t)
			if e := rpcError(t, m); e.Code != jsonrpc.CodeInvalidRequest {
				t.Errorf("code %d, want -32600 (%s)", e.Code, e.Message)
			}
			if want := tt.id; want != "" && string(m.ID) != want {
				t.Errorf("id %s, want %s", m.ID, want)
			}
		})
	}
	// Nothing reached the worker: the trace shows nothing sent to it, the note does not
	// exist, and the audit saw no tools/call.
	if n := strings.Count(f.log.String(), `"direction":"to_worker"`); n != forwarded {
		t.Errorf("%d messages reached a worker while the gateway refused them", n-forwarded)
	}
	rw := f.client("alice-rw")
	rw.open()
	if text := rw.callTool("30", "read_note", map[string]any{"name": "pwned"}).body; !strings.Contains(string(text), "isError") {
		t.Errorf("note pwned exists: %s", text)
	}
	if strings.Contains(f.log.String(), `"tool":"read_note","read_only":true`) {
		t.Errorf("a refused call was audited:\n%s", f.log)
	}
}

// Keys the gateway does not read may be anything, and repeats below the fields it reads (a
// tool's own arguments) are the worker's business.
func TestStrictReadingLeavesOtherKeysAlone(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	body := `{"jsonrpc":"2.0","id":40,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi","text":"ho"},"_meta":{"progressToken":"p","other":1}},"x-extra":true}`
	r := c.post(body)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var m *jsonrpc.Message
	for _, msg := range r.msgs {
		if string(msg.ID) == "40" {
			m = msg
		}
	}
	if m == nil || m.Error != nil {
		t.Fatalf("no answer to 40: %s", r.body)
	}
	if text := toolText(t, m); text != "ho" {
		t.Errorf("echo answered %q, want the worker's reading of its arguments, ho", text)
	}
}
