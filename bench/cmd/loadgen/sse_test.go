package main

import (
	"bufio"
	"strings"
	"testing"
)

// One reader serves a session's answers one after another (reset for each): an event for
// another id is skipped, a data line longer than the reader's buffer is gathered whole,
// and nothing of one answer is left for the next.
func TestSSEAnswersShareOneReader(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	bodies := []struct{ body, want, text string }{
		{"id: a\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n" +
			"id: b\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"" + long + "\"}]}}\n\n", "1", long},
		{"data: {\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}\n\n" +
			"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n\n", "2", "hi"},
	}
	var br *bufio.Reader
	for _, b := range bodies {
		if br == nil {
			br = bufio.NewReaderSize(strings.NewReader(b.body), 64<<10)
		} else {
			br.Reset(strings.NewReader(b.body))
		}
		a, err := readSSEAnswer(br, b.want)
		if err != nil {
			t.Fatalf("answer %s: %v", b.want, err)
		}
		if err := checkEcho(a, b.text); err != nil {
			t.Fatalf("answer %s: %v", b.want, err)
		}
	}
}
