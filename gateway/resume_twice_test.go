package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// The same cut POST stream resumed twice at once (two
// GETs with the same Last-Event-ID): the older reader ends, the newer gets the rest of the
// call and its answer exactly once, and the call is neither cancelled nor answered twice.
func TestDoubleResumeNewestWins(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "r-1", "method": "tools/call", "params": slowParams(3, true, "tok")})
	ctx, cut := context.WithCancel(context.Background())
	defer cut()
	resp := c.postStreaming(ctx, string(body))
	evs := readEvents(resp.Body)
	nextEvent(t, evs) // priming
	first, _ := nextEvent(t, evs)
	cut()
	resp.Body.Close()

	ctxA, cancelA := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelA()
	a := c.resumeStream(ctxA, first.id)
	defer a.Body.Close()
	aEvs := readEvents(a.Body)
	nextEvent(t, aEvs) // A's priming: A is attached
	ctxB, cancelB := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelB()
	b := c.resumeStream(ctxB, first.id)
	defer b.Body.Close()
	bEvs := readEvents(b.Body)

	aEnded := make(chan int)
	go func() {
		n := 0
		for ev := range aEvs {
			if strings.Contains(ev.data, `"id":"r-1"`) {
				n++
			}
		}
		aEnded <- n
	}()
	var answers int
	var got []string
	for {
		ev, ok := nextEvent(t, bEvs)
		if !ok {
			break
		}
		if ev.data == "" {
			continue
		}
		m, err := jsonrpc.Parse([]byte(ev.data), jsonrpc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.data)
		if m.IsResponse() {
			answers++
			if !strings.Contains(toolText(t, m), "done after 3 seconds") {
				t.Errorf("B's answer: %s", ev.data)
			}
		}
	}
	if answers != 1 {
		t.Errorf("the newer resumption got %d answers, want 1: %v", answers, got)
	}
	select {
	case n := <-aEnded:
		if n != 0 {
			t.Errorf("the superseded resumption also got the answer (%d)", n)
		}
	case <-time.After(5 * time.Second):
		t.Error("the superseded resumption did not end")
	}
}
