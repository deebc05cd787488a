//go:build unix

package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// These tests pin the fix for the demo worker's 60 s stall (see pollable):
// while it waits on stdin or stdout, the worker waits in the runtime's
// poller, never in a blocking read(2) or write(2) that a stop of the world
// can miss.

// workerPipe returns a pipe whose worker end is in blocking mode, as a
// worker's inherited stdin and stdout are, and whose other end, the test's,
// is polled, so that the only file reads and writes in the blocking
// system calls are the worker's.
func workerPipe(t *testing.T, workerReads bool) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatalf("pipe: %v", err)
	}
	testEnd := p[1]
	if !workerReads {
		testEnd = p[0]
	}
	if err := unix.SetNonblock(testEnd, true); err != nil {
		t.Fatalf("set non-blocking: %v", err)
	}
	r, w = os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// stdioWorker is demo.Run on blocking pipes, driven with raw JSON lines.
type stdioWorker struct {
	t              *testing.T
	in, out        *os.File // the worker's ends
	toWorker       *os.File
	fromWorker     *bufio.Reader
	fromWorkerFile *os.File
	ran            chan error
}

func startStdioWorker(t *testing.T) *stdioWorker {
	t.Helper()
	inR, inW := workerPipe(t, true)
	outR, outW := workerPipe(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	w := &stdioWorker{t: t, in: inR, out: outW, toWorker: inW, fromWorker: bufio.NewReaderSize(outR, 1<<16), fromWorkerFile: outR, ran: make(chan error, 1)}
	go func() { w.ran <- Run(ctx, Options{}, inR, outW) }()
	t.Cleanup(func() {
		cancel()
		inW.Close() // a worker still writing gets EPIPE
		outR.Close()
		select {
		case <-w.ran:
		case <-time.After(10 * time.Second):
			t.Error("Run did not end within 10 s of its context")
		}
	})
	w.send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": legacyVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "stdio-test", "version": "1"},
	}})
	w.answer(1)
	w.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return w
}

func (w *stdioWorker) send(msg any) {
	w.t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.toWorker.SetWriteDeadline(time.Now().Add(10 * time.Second)); err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.toWorker.Write(append(b, '\n')); err != nil {
		w.t.Fatalf("write to the worker: %v", err)
	}
}

// answer reads lines until the answer to id and returns its raw result.
func (w *stdioWorker) answer(id int) json.RawMessage {
	w.t.Helper()
	if err := w.fromWorkerFile.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		w.t.Fatal(err)
	}
	for {
		line, err := w.fromWorker.ReadBytes('\n')
		if err != nil {
			w.t.Fatalf("read the worker's answer %d: %v", id, err)
		}
		var a struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &a) != nil || string(a.ID) != fmt.Sprint(id) {
			continue
		}
		if a.Error != nil {
			w.t.Fatalf("answer %d is an error: %s", id, a.Error)
		}
		return a.Result
	}
}

// goroutineStates returns the state ("syscall", "IO wait", ...) of every
// goroutine whose stack has frame in it.
func goroutineStates(frame string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var states []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		_, state, ok := strings.Cut(head, " [")
		if !ok || !strings.Contains(g, frame) {
			continue
		}
		state, _, _ = strings.Cut(state, "]")
		state, _, _ = strings.Cut(state, ",") // "syscall, 2 minutes"
		states = append(states, state)
	}
	return states
}

// waitInPoller waits until some goroutine is in frame, and every one that is
// waits in the poller ("IO wait"), not in a system call.
func waitInPoller(t *testing.T, frame string) {
	t.Helper()
	var last []string
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		last = goroutineStates(frame)
		ok := len(last) > 0
		for _, s := range last {
			ok = ok && s == "IO wait"
		}
		if ok {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("goroutines in %s: states %q, want all in \"IO wait\"; a blocking system call there can stall a stop of the world for 60 s", frame, last)
}

func TestRunWaitsForStdinInThePoller(t *testing.T) {
	w := startStdioWorker(t)
	// Between requests, the worker's reader waits for the next line.
	waitInPoller(t, "os.(*File).Read(")
	w.send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{
		"name": "echo", "arguments": map[string]any{"text": "still here"},
	}})
	if res := w.answer(2); !strings.Contains(string(res), "still here") {
		t.Fatalf("echo answered %s", res)
	}
}

func TestRunWaitsForStdoutInThePoller(t *testing.T) {
	w := startStdioWorker(t)
	// An answer of 1 MiB fills the pipe (64 KiB) while the test does not
	// read: the worker's write waits for room.
	big := strings.Repeat("x", 1<<20)
	w.send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{
		"name": "echo", "arguments": map[string]any{"text": big},
	}})
	waitInPoller(t, "os.(*File).Write(")
	if res := w.answer(2); !strings.Contains(string(res), big) {
		t.Fatalf("echo answered %d bytes without the text", len(res))
	}
}

func TestRunLeavesStdioAsItFoundIt(t *testing.T) {
	w := startStdioWorker(t)
	w.toWorker.Close() // EOF: Run ends
	select {
	case err := <-w.ran:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end within 10 s of EOF")
	}
	w.ran <- nil // for the cleanup
	for _, f := range []*os.File{w.in, w.out} {
		raw, err := f.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var fl int
		if cerr := raw.Control(func(fd uintptr) { fl, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }); cerr != nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("%s: Run closed it: %v", f.Name(), err)
		}
		if fl&unix.O_NONBLOCK != 0 {
			t.Errorf("%s: left non-blocking", f.Name())
		}
	}
}
