//lint:file-ignore SA1019 logging and sampling are deprecated from 2026-07-28 but still part of 2025-11-25, which gemgate serves; the demo exercises them on purpose.

package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdoutLines reads the worker's stdout the way the gateway does: it keeps
// every line for inspection and passes on only the JSON ones.
type stdoutLines struct {
	mu    sync.Mutex
	lines []string
}

func (s *stdoutLines) filter(r io.Reader) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.lines = append(s.lines, line)
			s.mu.Unlock()
			if json.Valid([]byte(line)) {
				if _, err := pw.Write([]byte(line + "\n")); err != nil {
					return
				}
			}
		}
		pw.CloseWithError(sc.Err())
	}()
	return pr
}

func (s *stdoutLines) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// startRun runs the worker on pipes and connects a client to it.
func startRun(t *testing.T, ctx context.Context, o Options, copts *mcp.ClientOptions) (*mcp.ClientSession, *stdoutLines, io.Closer, <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()   // client -> worker stdin
	outR, outW := io.Pipe() // worker stdout -> client
	ran := make(chan error, 1)
	go func() {
		ran <- Run(ctx, o, inR, outW)
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close(); inR.Close(); outR.Close() })
	lines := &stdoutLines{}
	client := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "1"}, copts)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: lines.filter(outR), Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		t.Fatalf("client Connect: %v", err)
	}
	return cs, lines, inW, ran
}

func TestRunStdioWithChatter(t *testing.T) {
	logs := make(chan string, 10)
	copts := &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			if s, ok := req.Params.Data.(string); ok {
				logs <- s
			}
		},
	}
	cs, lines, stdin, ran := startRun(t, context.Background(), Options{User: "carol", Session: "s3", Chatter: true, tick: time.Millisecond}, copts)

	if got := mustOK(t, call(t, cs, "whoami", map[string]any{})); got != "user=carol session=s3 read_only=false" {
		t.Errorf("whoami = %q", got)
	}
	payload := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	if got := mustOK(t, call(t, cs, "echo", map[string]any{"text": payload})); got != payload {
		t.Errorf("echo over stdio changed the payload (len %d)", len(got))
	}
	// Run starts at log level info: no logging/setLevel needed.
	mustOK(t, call(t, cs, "slow", map[string]any{"seconds": 1, "log": true}))
	select {
	case msg := <-logs:
		if msg != "slow: 1 of 1 seconds" {
			t.Errorf("log message = %q", msg)
		}
	case <-time.After(5 * time.Second):
		t.Error("no log notification from slow")
	}

	// End of input ends Run without error.
	stdin.Close()
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run after EOF = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its input ended")
	}
	cs.Close()

	// Every JSON line was preceded by exactly one chatter line, numbered in order.
	got := lines.all()
	if len(got) < 8 {
		t.Fatalf("only %d stdout lines: %q", len(got), got)
	}
	n := 0
	for i, line := range got {
		if i%2 == 0 {
			n++
			if want := "chatter: " + strconv.Itoa(n); line != want {
				t.Fatalf("line %d = %.80q, want %q", i, line, want)
			}
			continue
		}
		if !json.Valid([]byte(line)) {
			t.Fatalf("line %d is not JSON: %.80q", i, line)
		}
	}
}

func TestRunWithoutChatterWritesOnlyJSON(t *testing.T) {
	cs, lines, stdin, ran := startRun(t, context.Background(), Options{User: "dave"}, nil)
	mustOK(t, call(t, cs, "whoami", map[string]any{}))
	stdin.Close()
	if err := <-ran; err != nil {
		t.Errorf("Run = %v", err)
	}
	for i, line := range lines.all() {
		if !json.Valid([]byte(line)) {
			t.Errorf("line %d is not JSON: %.80q", i, line)
		}
	}
}

func TestRunEndsWithContextAndCancelsTools(t *testing.T) {
	stderr := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{}, 1)
	copts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case started <- struct{}{}:
			default:
			}
		},
	}
	cs, _, _, ran := startRun(t, ctx, Options{User: "erin", Stderr: stderr, tick: 10 * time.Millisecond}, copts)
	go func() {
		params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 600, "progress": true}}
		params.SetProgressToken("t")
		cs.CallTool(context.Background(), params)
	}()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("slow sent no progress")
	}
	cancel()
	select {
	case err := <-ran:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if !strings.Contains(stderr.String(), "slow: cancelled\n") {
		t.Errorf("stderr %q lacks the cancellation marker", stderr.String())
	}
}

func TestChatterWriter(t *testing.T) {
	var out bytes.Buffer
	w := &chatterWriter{w: &out}
	// Lines split across writes and several lines in one write.
	for _, p := range []string{"{\"a\":", "1}\n", "{\"b\":2}\n{\"c\":3}\n", "{}\n"} {
		n, err := w.Write([]byte(p))
		if err != nil || n != len(p) {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	want := "chatter: 1\n{\"a\":1}\nchatter: 2\n{\"b\":2}\nchatter: 3\n{\"c\":3}\nchatter: 4\n{}\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}
