//go:build linux

package worker

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// TestAnswersOutliveLaterReads: an answer handed to its caller stays as the worker wrote it
// whatever the worker writes after it. Long answers are parsed in place, in the slice the line
// reader assembled for them, and short ones are copied out of its buffer; a message aliasing
// bytes the reader reads into again would change an answer a client has not yet received.
func TestAnswersOutliveLaterReads(t *testing.T) {
	p := startFake(t, "echo", nil)
	type kept struct {
		result []byte // the message's own bytes, as delivered
		want   string
	}
	var all []kept
	for i, n := range []int{10, 200000, 100, 1 << 20, 5000, 70000, 3, 300000, 50} {
		text := strings.Repeat(string(rune('a'+i)), n)
		params := fmt.Sprintf(`{"text":%q}`, text)
		m := call(t, p, fmt.Sprint(i+1), "echo", params)
		if m.Result == nil {
			t.Fatalf("call %d: no result: %s", i, snippet(m.Encode()))
		}
		want := fmt.Sprintf(`{"seenID":"%d","params":%s}`, i+1, params)
		if string(m.Result) != want {
			t.Fatalf("call %d: result %s, want %s", i, snippet(m.Result), snippet([]byte(want)))
		}
		all = append(all, kept{m.Result, want})
	}
	for i, k := range all {
		if !bytes.Equal(k.result, []byte(k.want)) {
			t.Errorf("answer %d (%d bytes) changed after later answers were read: %s", i, len(k.want), snippet(k.result))
		}
	}
}

// TestMessagesOutliveTheReadersBuffer is TestAnswersOutliveLaterReads without a worker process,
// so that the reuse is certain rather than up to the buffer pool: short and long messages
// written together, so that the reader moves the start of a long one over the short one
// before it that it has already handed out, and reads long ones into pooled parts.
func TestMessagesOutliveTheReadersBuffer(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	rec := &recorder{}
	p := &Process{spec: Spec{OnMessage: rec.add, MaxLineBytes: DefaultMaxLineBytes}, log: slog.New(slog.DiscardHandler), pending: map[int64]*Call{}}
	var in bytes.Buffer
	var want []string
	for i, n := range []int{10, 200000, 100, 1 << 20, 5000, 70000, 3, 300000, 50, 4000, 4100} {
		params := fmt.Sprintf(`{"text":%q}`, strings.Repeat(string(rune('a'+i)), n))
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","method":"m%d","params":%s}`+"\n", i, params)
		want = append(want, params)
	}
	go func() { w.Write(in.Bytes()); w.Close() }()
	p.readStdout(r) // until the end of the input
	got := rec.all()
	if len(got) != len(want) {
		t.Fatalf("%d messages, want %d", len(got), len(want))
	}
	for i, m := range got {
		if string(m.Params) != want[i] {
			t.Errorf("message %d (%d bytes) changed after later lines were read: %s", i, len(want[i]), snippet(m.Params))
		}
	}
}
