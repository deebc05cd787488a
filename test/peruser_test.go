package test

// Helpers for the per-user worker tests (worker_per: user, the default): several sessions of
// one user share one worker process, so these tests read which worker served a session from
// two independent places, gemgate's "session opened" log line (its pid and worker fields)
// and the worker's own `whoami` (the demo reports GEMGATE_SESSION, which is the worker's id
// with worker_per: user). Every name here starts with "pu".

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// puWho is what the demo worker's whoami tool says about the worker that answered.
type puWho struct {
	User, Worker string
	ReadOnly     bool
}

// puWhoami asks the worker serving cs who it is.
func puWhoami(t *testing.T, cs *mcp.ClientSession) puWho {
	t.Helper()
	var w puWho
	got := text(callTool(t, cs, "whoami", nil))
	if _, err := fmt.Sscanf(got, "user=%s session=%s read_only=%t", &w.User, &w.Worker, &w.ReadOnly); err != nil {
		t.Fatalf("whoami answered %q: %v", got, err)
	}
	return w
}

// puOpened is the worker pid and worker id gemgate logged when it opened session id.
func puOpened(t *testing.T, g *gemgate, id string) (pid int, worker string) {
	t.Helper()
	var opened map[string]any
	pollUntil(t, 10*time.Second, "a \"session opened\" log line for session "+id, func() bool {
		for _, ev := range g.logEvents("session opened") {
			if ev["session"] == id {
				opened = ev
				return true
			}
		}
		return false
	})
	p, _ := opened["pid"].(float64)
	w, _ := opened["worker"].(string)
	if p == 0 || w == "" {
		t.Fatalf("\"session opened\" for %s lacks a pid or worker: %v", id, opened)
	}
	return int(p), w
}

// puWaitStarted waits until the demo worker has logged "slow: started" n times in all.
func puWaitStarted(t *testing.T, g *gemgate, marker string, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if puCount(g, marker) >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%q logged %d times within %v, want %d", marker, puCount(g, marker), within, n)
}

// puCount is how many log lines contain s.
func puCount(g *gemgate, s string) int {
	g.logs.mu.Lock()
	defer g.logs.mu.Unlock()
	n := 0
	for _, l := range g.logs.lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// puToken gets a token from the dev issuer with the client_credentials grant, as client id
// asking for scope, for gemgate's MCP URL as resource.
func puToken(t *testing.T, g *gemgate, id, scope string) string {
	t.Helper()
	var secret string
	for _, c := range g.Clients {
		if c.ID == id {
			secret = c.Secret
		}
	}
	if secret == "" {
		t.Fatalf("gemgate dev printed no client %q", id)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {scope}, "resource": {g.URL}}
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(g.Issuer, "/")+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
		Scope       string `json:"scope"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != http.StatusOK || tok.AccessToken == "" {
		t.Fatalf("token request for %s (%s): status %d, %v", id, scope, resp.StatusCode, err)
	}
	if tok.Scope != scope {
		t.Fatalf("token for %s has scope %q, want %q", id, tok.Scope, scope)
	}
	return tok.AccessToken
}

// puPost sends a request on raw session s and streams what its POST response carries, JSON
// or SSE, on the returned channel, which is closed when the response ends. A non-200 status
// arrives as a message with an error whose code is the status.
func puPost(ctx context.Context, s *ltRaw, id any, method string, params any) <-chan ltMsg {
	ch := make(chan ltMsg, 256)
	go func() {
		defer close(ch)
		body := map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}
		resp, err := s.post(ctx, body, "application/json, text/event-stream")
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			var m ltMsg
			m.Error = &struct {
				Code    int             `json:"code"`
				Message string          `json:"message"`
				Data    json.RawMessage `json:"data"`
			}{Code: resp.StatusCode, Message: resp.Status}
			ch <- m
			return
		}
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			var m ltMsg
			if json.NewDecoder(resp.Body).Decode(&m) == nil {
				ch <- m
			}
			return
		}
		for m := range ltEvents(resp.Body) {
			ch <- m
		}
	}()
	return ch
}

// puAnswer waits for the answer (a message with an id and no method) on ch; every message
// before it is returned too. ok is false if ch ended first.
func puAnswer(t *testing.T, ch <-chan ltMsg, within time.Duration) (answer ltMsg, before []ltMsg, ok bool) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case m, open := <-ch:
			if !open {
				return answer, before, false
			}
			if m.Method == "" && (len(m.ID) > 0 || m.Error != nil) {
				return m, before, true
			}
			before = append(before, m)
		case <-deadline:
			t.Fatalf("no answer within %v (%d messages before)", within, len(before))
		}
	}
}

// puField is the first "text" content of a tools/call result (field is the content key).
func puField(result, field string) string {
	var r struct {
		Content []map[string]any `json:"content"`
	}
	if json.Unmarshal([]byte(result), &r) != nil {
		return ""
	}
	for _, c := range r.Content {
		if s, ok := c[field].(string); ok {
			return s
		}
	}
	return ""
}
