package test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

type sseEvent struct{ id, retry, data string }

// sseEvents parses an SSE body, sending each event on a channel closed when the body ends.
func sseEvents(body io.Reader) <-chan sseEvent {
	out := make(chan sseEvent, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(body)
		sc.Buffer(nil, 1<<20)
		var ev sseEvent
		seen := false
		for sc.Scan() {
			line := sc.Text()
			switch k, v, _ := strings.Cut(line, ":"); {
			case line == "":
				if seen {
					out <- ev
				}
				ev, seen = sseEvent{}, false
			case k == "":
				// a comment
			case k == "id":
				ev.id, seen = strings.TrimPrefix(v, " "), true
			case k == "retry":
				ev.retry, seen = strings.TrimPrefix(v, " "), true
			case k == "data":
				ev.data, seen = strings.TrimPrefix(v, " "), true
			}
		}
	}()
	return out
}

func awaitEvent(t *testing.T, evs <-chan sseEvent) (sseEvent, bool) {
	t.Helper()
	select {
	case ev, ok := <-evs:
		return ev, ok
	case <-time.After(30 * time.Second):
		t.Fatal("no SSE event within 30s")
		return sseEvent{}, false
	}
}

// TestStreamResumeAfterCut: through the binary, a POST whose answer streams (slow with
// progress) is cut mid-call; a GET with Last-Event-ID gets the progress that followed and
// the answer, and the call was never cancelled at the worker.
func TestStreamResumeAfterCut(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	c := rawClient{t: t, url: g.URL, token: g.Tokens["alice"]}
	sid := c.initialize()
	send := func(ctx context.Context, method string, body string, hdr map[string]string) *http.Response {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, g.URL, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+g.Tokens["alice"])
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", protocolVersion)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return resp
	}

	postCtx, cut := context.WithCancel(context.Background())
	defer cut()
	resp := send(postCtx, http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":3,"progress":true},"_meta":{"progressToken":"cut-tok"}}}`, nil)
	evs := sseEvents(resp.Body)
	prime, _ := awaitEvent(t, evs)
	if prime.id == "" || prime.retry == "" || prime.data != "" {
		t.Fatalf("the POST stream does not start with a priming event (id, retry, empty data): %+v", prime)
	}
	first, _ := awaitEvent(t, evs)
	if first.id == "" || !strings.Contains(first.data, `"progress":1`) {
		t.Fatalf("want the first progress with an id, got %+v", first)
	}
	cut()
	resp.Body.Close()

	getCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	gresp := send(getCtx, http.MethodGet, "", map[string]string{"Accept": "text/event-stream", "Last-Event-ID": first.id})
	defer gresp.Body.Close()
	if gresp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(gresp.Body)
		t.Fatalf("GET with Last-Event-ID: status %d: %s", gresp.StatusCode, b)
	}
	var got []rpcMessage
	for gevs := sseEvents(gresp.Body); ; {
		ev, ok := awaitEvent(t, gevs)
		if !ok {
			break
		}
		if ev.data == "" {
			continue
		}
		var m rpcMessage
		if err := json.Unmarshal([]byte(ev.data), &m); err != nil {
			t.Fatalf("not JSON-RPC: %s", ev.data)
		}
		got = append(got, m)
	}
	if len(got) != 3 || !strings.Contains(string(got[0].Params), `"progress":2`) ||
		!strings.Contains(string(got[1].Params), `"progress":3`) || string(got[2].ID) != "7" || got[2].Result == nil {
		t.Fatalf("resumed stream: want progress 2, progress 3, the answer to 7; got %+v", got)
	}
	if strings.Contains(g.logs.String(), "slow: cancelled") {
		t.Errorf("the cut cancelled the call at the worker\nlogs:\n%s", g.logs)
	}

	// Another user's token on the session is 404 before the id is looked at; a malformed id
	// on one's own session is 400.
	mallory := rawClient{t: t, url: g.URL, token: g.Tokens["bob"]}
	if r := mallory.do("GET", sid, nil, map[string]string{"Accept": "text/event-stream", "Last-Event-ID": first.id}); r.status != http.StatusNotFound {
		t.Errorf("another user's resume: status %d, want 404", r.status)
	}
	if r := c.do("GET", sid, nil, map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "bogus"}); r.status != http.StatusBadRequest {
		t.Errorf("a malformed Last-Event-ID: status %d, want 400", r.status)
	}
}
