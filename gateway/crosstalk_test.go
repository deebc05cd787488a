package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gemgate/gemgate/gateway/limit"
)

// TestNoCrossTalk runs many concurrent calls with distinct payloads and ids that collide
// across sessions: every answer must be the one its request asked for.
func TestNoCrossTalk(t *testing.T) {
	const sessions, calls = 20, 50
	// Ten sessions per user, opened back to back: more than the default start burst.
	f := newFixture(t, func(o *Options) { o.Trace, o.Limits.WorkerStartRate = nil, limit.None })
	clients := make([]*client, sessions)
	var wg sync.WaitGroup
	for i := range clients {
		token := "alice-rw"
		if i%2 == 1 {
			token = "bob-rw"
		}
		clients[i] = f.client(token)
	}
	for _, c := range clients {
		c.open()
	}
	errs := make(chan error, sessions*calls)
	for i, c := range clients {
		for j := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// The same ids in every session; payload sizes vary from a few bytes to 4 KiB.
				id := fmt.Sprintf(`"call-%d"`, j)
				text := fmt.Sprintf("s%d-c%d-", i, j) + strings.Repeat(string(rune('a'+j%26)), (j*j*29)%4096)
				r, err := c.do(context.Background(), http.MethodPost,
					rpcBody(id, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": text}}))
				switch {
				case err != nil:
					errs <- err
				case r.status != http.StatusOK || len(r.msgs) != 1:
					errs <- fmt.Errorf("session %d call %d: status %d, %d messages", i, j, r.status, len(r.msgs))
				case string(r.msgs[0].ID) != id:
					errs <- fmt.Errorf("session %d call %d: answer id %s", i, j, r.msgs[0].ID)
				default:
					got := echoed(r)
					if got != text {
						errs <- fmt.Errorf("session %d call %d: got %.40q..., want %.40q...", i, j, got, text)
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 10 {
			t.Error(err)
		}
	}
	if n > 0 {
		t.Errorf("%d of %d calls went wrong", n, sessions*calls)
	}
}

// echoed is the text of an echo answer, or "" if it is something else.
func echoed(r reply) string {
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if m := r.msgs[0]; m.Error != nil || json.Unmarshal(m.Result, &res) != nil || len(res.Content) != 1 {
		return ""
	}
	return res.Content[0].Text
}
