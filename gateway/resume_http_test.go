package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

type rawEvent struct{ id, retry, data string }

// readEvents parses an SSE body into events (comments skipped) and sends each on a channel
// that is closed when the body ends.
func readEvents(body interface{ Read([]byte) (int, error) }) <-chan rawEvent {
	out := make(chan rawEvent, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(body)
		sc.Buffer(nil, 1<<20)
		var ev rawEvent
		seen := false
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				if seen {
					out <- ev
				}
				ev, seen = rawEvent{}, false
				continue
			}
			if strings.HasPrefix(line, ":") {
				continue
			}
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			seen = true
			switch k {
			case "id":
				ev.id = v
			case "retry":
				ev.retry = v
			case "data":
				ev.data = v
			}
		}
	}()
	return out
}

func nextEvent(t *testing.T, evs <-chan rawEvent) (rawEvent, bool) {
	t.Helper()
	select {
	case ev, ok := <-evs:
		return ev, ok
	case <-time.After(15 * time.Second):
		t.Fatal("no event within 15s")
		return rawEvent{}, false
	}
}

// TestResumeAfterCut: a client whose POST stream is cut mid-call gets the progress it missed
// and the answer by GET with Last-Event-ID; the call is not cancelled by the cut.
func TestResumeAfterCut(t *testing.T) {
	f := newFixture(t)
	c := f.client("alice-rw")
	c.open()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "r-1", "method": "tools/call", "params": slowParams(3, true, "tok")})
	ctx, cut := context.WithCancel(context.Background())
	defer cut()
	resp := c.postStreaming(ctx, string(body))
	evs := readEvents(resp.Body)
	prime, _ := nextEvent(t, evs)
	if prime.id == "" || prime.retry == "" || prime.data != "" {
		t.Fatalf("first event is not a priming event: %+v", prime)
	}
	first, _ := nextEvent(t, evs)
	if first.id == "" || !strings.Contains(first.data, "notifications/progress") {
		t.Fatalf("second event is not the first progress: %+v", first)
	}
	cut() // the connection goes mid-call
	resp.Body.Close()

	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	gresp := c.resumeStream(ctx2, first.id)
	defer gresp.Body.Close()
	var got []*jsonrpc.Message
	gevs := readEvents(gresp.Body)
	for {
		ev, ok := nextEvent(t, gevs)
		if !ok {
			break
		}
		if ev.data == "" {
			continue // the resumed stream's priming event
		}
		if ev.id == "" {
			t.Errorf("event without an id: %+v", ev)
		}
		m, err := jsonrpc.Parse([]byte(ev.data), jsonrpc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	// slow sends progress 1, 2 and 3 of 3; the first came before the cut.
	if len(got) != 3 || !strings.Contains(string(got[0].Params), `"progress":2`) ||
		!strings.Contains(string(got[1].Params), `"progress":3`) || string(got[2].ID) != `"r-1"` ||
		!strings.Contains(toolText(t, got[2]), "done after 3 seconds") {
		var enc []string
		for _, m := range got {
			enc = append(enc, string(m.Encode()))
		}
		t.Fatalf("resumed stream: want progress 2 and 3, then the answer, got %v", enc)
	}
}

// TestResumeRefusals: an id that is not this session's, or is malformed, is 400; another
// user's token on the session is 404 before the id is looked at.
func TestResumeRefusals(t *testing.T) {
	f := newFixture(t)
	a := f.client("alice-rw")
	a.open()
	r := a.callTool("1", "echo", map[string]any{"text": "x"})
	var id string
	for ev := range readEvents(strings.NewReader(string(r.body))) {
		if ev.id != "" {
			id = ev.id
		}
	}
	if id == "" {
		t.Fatalf("an SSE answer with no event id: %s", r.body)
	}
	b := f.client("alice-rw")
	b.open()
	mallory := f.client("bob-rw")
	mallory.session, mallory.version = a.session, a.version

	tests := []struct {
		name   string
		c      *client
		lastID string
		want   int
	}{
		{"another session's id", b, id, http.StatusBadRequest},
		{"malformed", a, "0", http.StatusBadRequest},
		{"past the stream", a, id + "9", http.StatusBadRequest},
		{"another user", mallory, id, http.StatusNotFound},
		{"own id", a, id, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, err := tc.c.newRequest(ctx, http.MethodGet, nil, "Accept", "text/event-stream", "Last-Event-ID", tc.lastID)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}
