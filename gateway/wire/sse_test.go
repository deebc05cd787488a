package wire

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
)

// parseSSE reads an event stream as the HTML standard's event-stream interpretation does:
// lines end at CRLF, LF or CR; "data" fields append to the data buffer, one LF each; an
// empty line dispatches the event unless the buffer is empty; comments and other fields
// are ignored here. It returns the data of every event dispatched.
func parseSSE(stream []byte) []string {
	var events []string
	var data []byte
	have := false
	for len(stream) > 0 {
		i := bytes.IndexAny(stream, "\r\n")
		if i < 0 {
			break // an unterminated last line is discarded, as by the standard
		}
		line := stream[:i]
		next := i + 1
		if stream[i] == '\r' && i+1 < len(stream) && stream[i+1] == '\n' {
			next++
		}
		stream = stream[next:]
		if len(line) == 0 {
			if have {
				events = append(events, string(bytes.TrimSuffix(data, []byte("\n"))))
			}
			data, have = nil, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		if string(field) == "data" {
			data = append(append(data, value...), '\n')
			have = true
		}
	}
	return events
}

// sseData is what a parser gets back from event(data): line ends are the stream's own
// syntax, so CRLF and CR come back as LF.
func sseWant(data []byte) string {
	d := bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	return string(bytes.ReplaceAll(d, []byte("\r"), []byte("\n")))
}

// FuzzSSEEvent: an event written for any data parses back as exactly one event with that
// data, whatever bytes and line breaks it holds.
func FuzzSSEEvent(f *testing.F) {
	// Seeds: testdata/fuzz/FuzzSSEEvent.
	f.Fuzz(func(t *testing.T, data []byte) {
		rec := httptest.NewRecorder()
		s := NewSSE(rec, WriteTimeout)
		if err := s.Event(data); err != nil {
			t.Fatal(err)
		}
		events := parseSSE(rec.Body.Bytes())
		if len(events) != 1 || events[0] != sseWant(data) {
			t.Fatalf("event(%q) parsed back as %q", data, events)
		}
	})
}

// TestEventWithTheLongestID: an event with an id of the longest length gemgate reads back
// (64 bytes) and a tiny message is written whole.
func TestEventWithTheLongestID(t *testing.T) {
	rec := httptest.NewRecorder()
	id := strings.Repeat("7", MaxEventIDLen)
	if err := NewSSE(rec, WriteTimeout).EventID(id, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if want := "id: " + id + "\nevent: message\ndata: {}\n\n"; rec.Body.String() != want {
		t.Errorf("wrote %q, want %q", rec.Body, want)
	}
}
