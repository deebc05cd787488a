package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv("LOADGEN_TEST_WORKER") == "1" {
		shuffledEchoWorker()
		return
	}
	if os.Getenv("LOADGEN_TEST_MAIN") == "1" { // loadgen itself, with the arguments given
		main()
		return
	}
	os.Exit(m.Run())
}

// shuffledEchoWorker answers each tools/call echo after a random pause of its own, so that
// answers come back in another order than the calls went out, with a notification and an
// answer to an id nobody sent before each.
func shuffledEchoWorker() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	write := func(lines ...string) {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			out.WriteString(l + "\n")
		}
		out.Flush()
	}
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		if req.Method == "initialize" {
			write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"echo","version":"1"}}}`, req.ID))
			continue
		}
		go func() {
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
			text, _ := json.Marshal(req.Params.Arguments.Text)
			write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
				`{"jsonrpc":"2.0","id":"nobody's","result":{"content":[{"type":"text","text":"x"}]}}`,
				fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`, req.ID, text))
		}()
	}
}

// Sessions sharing one worker (-shared) each get the answer to their own call, whatever the
// order the worker answers in: each session sends texts of its own length, and loadgen
// checks the length of the text that comes back.
func TestSharedWorkerAnswersEachCallerItsOwn(t *testing.T) {
	t.Setenv("LOADGEN_TEST_WORKER", "1")
	w := &sharedWorker{argv: []string{os.Args[0]}}
	const sessions, calls = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		s, err := w.session()
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.end(context.Background())
			text := strings.Repeat("x", i+1)
			for range calls {
				if err := s.echo(context.Background(), text); err != nil {
					errs <- fmt.Errorf("session %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.waiting) != 0 || w.users != 0 {
		t.Fatalf("left: %d calls waiting, %d sessions", len(w.waiting), w.users)
	}
}

// A worker that dies fails the calls waiting on it instead of leaving them waiting.
func TestSharedWorkerDeathFailsTheCall(t *testing.T) {
	w := &sharedWorker{argv: []string{"sh", "-c", `read line; echo '{"jsonrpc":"2.0","id":1,"result":{}}'; read line; read line; exit 0`}}
	s, err := w.session()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.echo(context.Background(), "hello") }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "shared worker stdout") {
			t.Fatalf("call to a worker that exited: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call still waits on a worker that exited")
	}
}
