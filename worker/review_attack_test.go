//go:build linux

package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// Hostile callers: many at once, each giving up at a random moment (before it sends, while
// it waits for its turn, while its line is being written, or never), to a worker that reads
// slowly through a small pipe, so that callers pile up behind the turn. Whatever the timing:
// the worker reads whole lines only; a line is written exactly when its Send reported no
// error (a line given up before its turn is never written; one being written is, and its
// caller learns so); each line is written once; and every call sent is answered. The worker
// answers every line it reads, with its key: its answers, as traced, are what it read.
func TestReviewGiveUpAtAnyMoment(t *testing.T) {
	ready := make(chan struct{})
	var mu sync.Mutex
	var answered [][]byte
	p := startSpec(t, "slow", Spec{
		OnMessage: func(m *jsonrpc.Message) {
			switch m.Method {
			case "slow":
				close(ready)
			case "unreadable":
				t.Errorf("the worker read a line that is not one request: %s", m.Params)
			}
		},
		OnTrace: func(direction string, line []byte) {
			if direction == "from_worker" {
				mu.Lock()
				answered = append(answered, bytes.Clone(line))
				mu.Unlock()
			}
		},
	})
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow worker never said it was ready")
	}
	pad := strings.Repeat("x", 1000) // four lines fill the worker's pipe
	const callers, each = 16, 40
	type outcome struct {
		key  string
		call *Call
		err  error
	}
	results := make(chan outcome, callers*each)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for i := range each {
				key := fmt.Sprintf("c%d-%d", c, i)
				ctx, cancel := context.WithCancel(t.Context())
				switch rng.IntN(4) {
				case 0: // gives up before it sends
					cancel()
				case 1: // gives up a moment later: queued, taken, or written
					time.AfterFunc(time.Duration(rng.IntN(400))*time.Microsecond, cancel)
				}
				req := &jsonrpc.Message{ID: json.RawMessage(`"` + key + `"`), Method: "ping",
					Params: json.RawMessage(`{"key":"` + key + `","pad":"` + pad + `"}`)}
				call, err := p.Send(ctx, req, nil)
				results <- outcome{key, call, err}
				cancel()
			}
		})
	}
	allBack := make(chan struct{})
	go func() { wg.Wait(); close(allBack) }()
	select {
	case <-allBack:
	case <-time.After(30 * time.Second):
		t.Fatalf("callers still in Send after 30 s: turn held %v", p.turnHeld())
	}
	close(results)

	sent := map[string]*Call{}
	failed := map[string]bool{}
	for r := range results {
		if r.err != nil {
			failed[r.key] = true
		} else {
			sent[r.key] = r.call
		}
	}
	for key, call := range sent {
		select {
		case m := <-call.Result():
			if string(m.ID) != `"`+key+`"` || m.Result == nil {
				t.Errorf("call %s answered %s", key, m.Encode())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer to call %s", key)
		}
	}
	// The worker answers in the order it reads: once this is answered, all before it are.
	if m := call(t, p, `"last"`, "ping", ""); m.Result == nil {
		t.Fatalf("last call answered %s", m.Encode())
	}
	written := map[string]int{}
	mu.Lock()
	defer mu.Unlock()
	for _, line := range answered {
		var answer struct {
			Result struct{ Params struct{ Key string } }
		}
		if json.Unmarshal(line, &answer) == nil && answer.Result.Params.Key != "" {
			written[answer.Result.Params.Key]++
		}
	}
	for key, n := range written {
		switch {
		case n != 1:
			t.Errorf("line %s written %d times", key, n)
		case failed[key]:
			t.Errorf("line %s was written, but its Send reported an error", key)
		}
	}
	for key := range sent {
		if written[key] != 1 {
			t.Errorf("Send %s reported no error, but its line was not written", key)
		}
	}
	if len(sent) == 0 || len(failed) == 0 {
		t.Fatalf("%d calls sent, %d gave up: the test needs both", len(sent), len(failed))
	}
	t.Logf("%d sent, %d gave up", len(sent), len(failed))
	if p.turnHeld() {
		t.Error("after every caller returned, the turn is still held")
	}
}
