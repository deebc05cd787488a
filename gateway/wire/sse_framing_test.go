package wire

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// appendEventByIndexAny is the framing AppendEvent had when it looked for line breaks with
// bytes.IndexAny: the reference its faster search must match byte for byte.
func appendEventByIndexAny(buf []byte, id string, msg []byte) []byte {
	if len(id) > 0 {
		buf = append(append(append(buf, "id: "...), id...), '\n')
	}
	buf = append(buf, "event: message\n"...)
	for {
		i := bytes.IndexAny(msg, "\r\n")
		if i < 0 {
			break
		}
		buf = append(append(append(buf, "data: "...), msg[:i]...), '\n')
		if msg[i] == '\r' && i+1 < len(msg) && msg[i+1] == '\n' {
			i++
		}
		msg = msg[i+1:]
	}
	buf = append(append(buf, "data: "...), msg...)
	return append(buf, "\n\n"...)
}

// TestEventFramingIsUnchanged: every event is framed byte for byte as before, whatever line
// breaks its message holds, in whatever order: lone CRs and LFs, CRLF, LFCR, runs of each,
// breaks at either end.
func TestEventFramingIsUnchanged(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for _, msg := range []string{
		"", "{}", `{"jsonrpc":"2.0","id":1,"result":{}}`,
		"\n", "\r", "\r\n", "\n\r", "\r\r\n\n", "a\nb", "a\rb", "a\r\nb", "a\n\rb",
		"\ra", "a\r", "\na", "a\n", "a\r\n\r\nb", "\r\r\r\r\n", "\n\n\n\r",
		long + "\r" + long + "\n" + long + "\r\n" + long,
		strings.Repeat("\r", 1000) + "\n" + strings.Repeat("ab\n", 300),
	} {
		for _, id := range []string{"", "0123456789ab_1_1"} {
			got := AppendEvent([]byte("prefix"), id, []byte(msg))
			want := appendEventByIndexAny([]byte("prefix"), id, []byte(msg))
			if !bytes.Equal(got, want) {
				t.Errorf("event(%q, id %q) = %q, want %q", clipString(msg), id, clipString(string(got)), clipString(string(want)))
			}
		}
	}
}

// FuzzEventFramingIsUnchanged is TestEventFramingIsUnchanged on any bytes.
func FuzzEventFramingIsUnchanged(f *testing.F) {
	for _, s := range []string{"a\r\nb", "\r\r\n\n", "\n\rx", "{}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		if got, want := AppendEvent(nil, "7", msg), appendEventByIndexAny(nil, "7", msg); !bytes.Equal(got, want) {
			t.Fatalf("event(%q) = %q, want %q", msg, got, want)
		}
	})
}

func clipString(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// BenchmarkAppendEvent frames a 1 MiB answer (JSON on one line, as Encode makes it): the
// IndexByte search against the IndexAny one it replaced.
func BenchmarkAppendEvent(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("abcdefgh", 1<<17) + `"}]}}`)
	buf := make([]byte, 0, len(msg)+96)
	for _, impl := range []struct {
		name  string
		frame func([]byte, string, []byte) []byte
	}{{"IndexByte", AppendEvent[string]}, {"IndexAny", appendEventByIndexAny}} {
		b.Run(impl.name, func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				buf = impl.frame(buf[:0], "0123456789ab_1_1", msg)
			}
		})
	}
}

// TestPlacedEventFramesAsAppendEvent: a message encoded in place is framed byte for byte as
// AppendEvent frames its encoding, after any head, with or without an id; a method that
// escapes to more than its length, and a head that does not fit the room, still frame right.
func TestPlacedEventFramesAsAppendEvent(t *testing.T) {
	long := strings.Repeat("y", 70000)
	msgs := []*jsonrpc.Message{
		{ID: []byte(`"req-7"`), Result: []byte(`{"text":"` + long + `"}`)},
		{ID: []byte(`7`), Result: []byte(`{}`)},
		{Method: "notifications/<odd>&", Params: []byte(`{"a":"<b>"}`)},
		{ID: []byte(`1`), Result: []byte("{\n\"a\": 1\r\n}")}, // compacted by Encode
	}
	prime := AppendPrime(nil, "0123456789ab_1_0", SSERetry)
	for i, m := range msgs {
		for _, head := range [][]byte{nil, prime, bytes.Repeat([]byte("h"), placedHeadRoom)} {
			for _, id := range []string{"", "0123456789ab_1_1"} {
				p := PlaceEvent(m)
				want := AppendEvent(append([]byte(nil), head...), id, m.Encode())
				got := p.Frame(head, []byte(id))
				if !bytes.Equal(got, want) {
					t.Errorf("message %d, head %d bytes, id %q: frame %q, want %q", i, len(head), id, clipString(string(got)), clipString(string(want)))
				}
				// The point of it: the frame holds the message where it was encoded, uncopied.
				inPlace := len(head) < placedHeadRoom/2 && i != 2 // room enough, and no escapes
				if d := p.Data(); inPlace && &got[len(got)-2-len(d)] != &d[0] {
					t.Errorf("message %d, head %d bytes: the frame holds a copy of the message", i, len(head))
				}
				if !bytes.Equal(p.Data(), m.Encode()) {
					t.Errorf("message %d: data %q after framing, want %q", i, clipString(string(p.Data())), clipString(string(m.Encode())))
				}
			}
		}
	}
}

// TestCopiedEventFramesAsAppendEvent: a message with no room in front is framed as
// AppendEvent frames it, a tiny one without a head or an id too.
func TestCopiedEventFramesAsAppendEvent(t *testing.T) {
	for _, msg := range []string{"{}", "", "{\n}", strings.Repeat("z", 200)} {
		for _, head := range [][]byte{nil, []byte(": hi\n\n")} {
			for _, id := range []string{"", "0123456789ab_1_1"} {
				want := AppendEvent(append([]byte(nil), head...), id, []byte(msg))
				if got := CopiedEvent([]byte(msg)).Frame(head, []byte(id)); !bytes.Equal(got, want) {
					t.Errorf("message %q, head %q, id %q: frame %q, want %q", msg, head, id, got, want)
				}
			}
		}
	}
}
