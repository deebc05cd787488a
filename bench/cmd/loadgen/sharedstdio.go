package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// sharedWorker is one worker process that every session's calls reach at once over its one
// pair of pipes, with nothing in between (-shared): what the worker itself serves when K
// callers share it, as they do with one worker per user (gemgate (g), ToolHive, the relay
// floor). No gateway in front of one shared worker passes more calls through it than this,
// on the same machine: the gateway adds processes and work, and loadgen's HTTP clients cost
// more than these pipe writes.
type sharedWorker struct {
	argv  []string
	start sync.Once
	s     *stdioSession
	err   error // the start's, or the reader's once the worker's stdout ended

	mu      sync.Mutex // the ids, waiting and users; never held across I/O
	nextID  int
	waiting map[string]chan *rpcAnswer
	users   int // sessions that have not ended

	// in serialises writes to the worker's stdin. It is not mu: a write that blocks (the
	// worker not reading, as it waits to write its answers) must not stop the reader from
	// routing those answers, or neither side would move.
	in sync.Mutex
}

// session opens one caller of the shared worker, starting the worker for the first.
func (w *sharedWorker) session() (session, error) {
	w.start.Do(func() {
		w.waiting = map[string]chan *rpcAnswer{}
		if w.s, _, w.err = openStdio(w.argv); w.err == nil {
			go w.read()
		}
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return nil, w.err
	}
	w.users++
	return sharedCaller{w}, nil
}

// read hands each answer to the call waiting for its id; other lines are skipped, and so is
// a message with a method: the worker's own request (ping, roots/list) or notification, whose
// id, numbered by the worker, may equal a call's.
func (w *sharedWorker) read() {
	for {
		line, err := w.s.out.ReadBytes('\n')
		if err != nil {
			w.mu.Lock()
			w.err = fmt.Errorf("shared worker stdout: %w", err)
			for id, ch := range w.waiting {
				close(ch)
				delete(w.waiting, id)
			}
			w.mu.Unlock()
			return
		}
		a, ok := answerLine(line)
		if !ok {
			continue
		}
		w.mu.Lock()
		ch := w.waiting[string(a.ID)]
		delete(w.waiting, string(a.ID))
		w.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
}

// answerLine reads a worker's stdout line as an answer. A message with a method is not one:
// the worker's own request (ping, roots/list) or notification, whose id, numbered by the
// worker, may equal a call's.
func answerLine(line []byte) (*rpcAnswer, bool) {
	var a struct {
		rpcAnswer
		Method *string `json:"method"`
	}
	if json.Unmarshal(line, &a) != nil || a.Method != nil {
		return nil, false
	}
	return &a.rpcAnswer, true
}

func (w *sharedWorker) echo(text string) error {
	ch := make(chan *rpcAnswer, 1)
	w.mu.Lock()
	if w.err != nil {
		defer w.mu.Unlock()
		return w.err
	}
	w.nextID++
	n := w.nextID
	id := strconv.Itoa(n)
	w.waiting[id] = ch
	w.mu.Unlock()
	w.in.Lock()
	err := w.s.send(map[string]any{"jsonrpc": "2.0", "id": n, "method": "tools/call",
		"params": map[string]any{"name": "echo", "arguments": map[string]any{"text": text}}})
	w.in.Unlock()
	if err != nil {
		w.mu.Lock()
		delete(w.waiting, id)
		w.mu.Unlock()
		return err
	}
	a, ok := <-ch
	if !ok {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.err
	}
	if a.Error != nil {
		return fmt.Errorf("tools/call: JSON-RPC error %s", a.Error)
	}
	return checkEcho(a, text)
}

// end stops the worker when its last session ends.
func (w *sharedWorker) end() {
	w.mu.Lock()
	w.users--
	last := w.users == 0
	w.mu.Unlock()
	if last {
		w.s.close()
	}
}

type sharedCaller struct{ w *sharedWorker }

func (c sharedCaller) echo(_ context.Context, text string) error { return c.w.echo(text) }
func (c sharedCaller) end(context.Context)                       { c.w.end() }

var errSharedNeedsStdio = errors.New("-shared needs -stdio and the calls mode")
