//go:build linux

package worker

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
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
	p := &Process{spec: Spec{OnMessage: rec.add}, log: slog.New(slog.DiscardHandler), pending: map[int64]*Call{}}
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

// TestLongMessageIsNotCopied: a 1 MiB message from the worker costs about one allocation of
// its size on its way from the pipe to its recipient: the line is assembled once and parsed
// in place, where the line reader's doubling buffer and Parse's copy took five.
func TestLongMessageIsNotCopied(t *testing.T) {
	const size, lines = 1 << 20, 8
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	got := make(chan int, 1)
	p := &Process{log: slog.New(slog.DiscardHandler), pending: map[int64]*Call{}, spec: Spec{
		OnMessage: func(m *jsonrpc.Message) { got <- len(m.Params) },
	}}
	line := []byte(`{"jsonrpc":"2.0","method":"m","params":"` + strings.Repeat("x", size) + "\"}\n")
	done := make(chan struct{})
	go func() { defer close(done); p.readStdout(r) }()
	t.Cleanup(func() { w.Close(); <-done }) // the reader ends at the end of its input
	read := func() {
		t.Helper()
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-got:
			if n != size+2 {
				t.Fatalf("params of %d bytes, want %d", n, size+2)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the message never came")
		}
	}
	perLine := allocatedPerCall(lines, read)
	if perLine > 1.5*size {
		t.Errorf("%.0f bytes allocated per %d-byte message, want at most 1.5 times the message", perLine, size)
	}
}
