//go:build linux

package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// slowStdin keeps a copy of every write and makes each take a little while, as a worker
// that reads slowly does: callers pile up behind the turn, so that lines are combined,
// queued and given up while queued or taken.
type slowStdin struct {
	stdinFile
	mu     sync.Mutex
	writes [][]byte
}

func (s *slowStdin) Write(b []byte) (int, error) {
	s.mu.Lock()
	s.writes = append(s.writes, bytes.Clone(b))
	s.mu.Unlock()
	time.Sleep(200 * time.Microsecond) // a slow reader, not a wait for anything
	return s.stdinFile.Write(b)
}

// Hostile callers: many at once, each giving up at a random moment (before it sends, while
// it waits for its turn, while its line is being written, or never). Whatever the timing:
// every write holds whole lines only; a line is written exactly when its Send reported no
// error (a line given up before its turn is never written; one being written is, and its
// caller learns so); each line is written once; and every call sent is answered.
func TestReviewGiveUpAtAnyMoment(t *testing.T) {
	rec := &slowStdin{}
	p := startSpec(t, "echo", Spec{wrapStdin: func(f stdinFile) stdinFile { rec.stdinFile = f; return rec }})
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
					Params: json.RawMessage(`{"key":"` + key + `"}`)}
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
	written := map[string]int{}
	rec.mu.Lock()
	writes := rec.writes
	rec.mu.Unlock()
	for _, w := range writes {
		if len(w) == 0 || w[len(w)-1] != '\n' {
			t.Fatalf("a write does not end a line: %.80q", w)
		}
		for line := range bytes.Lines(w) {
			m, err := jsonrpc.Parse(bytes.TrimSuffix(line, []byte("\n")), jsonrpc.Options{})
			if err != nil {
				t.Fatalf("a line written is not one message (%v): %.120q", err, line)
			}
			var params struct{ Key string }
			if m.Method == "ping" && json.Unmarshal(m.Params, &params) == nil && params.Key != "" {
				written[params.Key]++
			}
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
	for key, call := range sent {
		if written[key] != 1 {
			t.Errorf("Send %s reported no error, but its line was not written", key)
			continue
		}
		select {
		case m := <-call.Result():
			if string(m.ID) != `"`+key+`"` || m.Result == nil {
				t.Errorf("call %s answered %s", key, m.Encode())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer to call %s", key)
		}
	}
	if len(sent) == 0 || len(failed) == 0 {
		t.Fatalf("%d calls sent, %d gave up: the test needs both", len(sent), len(failed))
	}
	t.Logf("%d sent, %d gave up, %d writes", len(sent), len(failed), len(writes))
	if p.turnHeld() {
		t.Error("after every caller returned, the turn is still held")
	}
}
