package test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The guarantees a mutation audit found no end-to-end test for, replayed against the real
// binary: each test here fails when the behaviour it names is broken in gemgate.

// TestAttackAuditSessionCapHoldsAfterAnEnd: max_sessions_per_user counts the sessions a user
// still has. A user at the cap who ends one session gets one back, not a fresh cap: with a
// cap of 2, after an end and a reopen, a third initialize is 429, round after round.
func TestAttackAuditSessionCapHoldsAfterAnEnd(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--max-sessions-per-user", "2", "--max-sessions", "20", "--worker-start-rate", "0")
	alice := g.Tokens["alice"]
	a, b := ltOpen(t, g, alice, nil), ltOpen(t, g, alice, nil)
	alRefused(t, g, alice, `"over-0"`, http.StatusTooManyRequests)
	for round := range 3 {
		if code := a.delete(); code != http.StatusOK {
			t.Fatalf("round %d: DELETE: status %d", round, code)
		}
		a = ltOpen(t, g, alice, nil) // the slot the ended session gave back
		alRefused(t, g, alice, `"over-`+string(rune('1'+round))+`"`, http.StatusTooManyRequests)
	}
	// The two sessions alice holds work; bob is not counted against her.
	for _, s := range []*ltRaw{a, b} {
		if got := string(s.tool("echo", map[string]any{"text": "held"})); !strings.Contains(got, "held") {
			t.Errorf("echo = %s", got)
		}
	}
	ltOpen(t, g, g.Tokens["bob"], nil)
}

// auditEvents reads an SSE body's events as their lines, up to the end of the body.
func auditEvents(t *testing.T, resp *http.Response) [][]string {
	t.Helper()
	var out [][]string
	var ev []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if sc.Text() == "" {
			if len(ev) > 0 {
				out = append(out, ev)
			}
			ev = nil
			continue
		}
		ev = append(ev, sc.Text())
	}
	return out
}

// TestAttackAuditLogLinesAndPriming: with post_answers json, a call whose worker sends log
// lines before its answer is answered as a stream that carries them, on the call's own POST
// stream; every stream starts with a priming event carrying "retry: 1000"; the worker's
// stderr goes to gemgate's log with the user it runs for.
func TestAttackAuditLogLinesAndPriming(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--post-answers", "json")
	s := ltOpen(t, g, g.Tokens["alice"], nil)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := s.post(ctx, map[string]any{"jsonrpc": "2.0", "id": "log-1", "method": "tools/call",
		"params": map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 2, "log": true}}}, "application/json, text/event-stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("a call that logs, with post_answers json: status %d, Content-Type %q; want its answer streamed with the log lines", resp.StatusCode, ct)
	}
	evs := auditEvents(t, resp)
	if len(evs) == 0 {
		t.Fatal("the POST stream carried no event")
	}
	if len(evs[0]) < 2 || !strings.HasPrefix(evs[0][0], "id: ") || evs[0][1] != "retry: 1000" {
		t.Errorf("the POST stream's first event is %q, want a priming event with an id and \"retry: 1000\"", evs[0])
	}
	var logs []string
	answered := false
	for _, ev := range evs {
		for _, line := range ev {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || data == "" {
				continue
			}
			var m rpcMessage
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatalf("event data %q: %v", data, err)
			}
			switch {
			case m.Method == "notifications/message":
				if answered {
					t.Errorf("a log line after the call's answer: %s", data)
				}
				var p struct {
					Data string `json:"data"`
				}
				json.Unmarshal(m.Params, &p)
				logs = append(logs, p.Data)
			case string(m.ID) == `"log-1"`:
				answered = true
			}
		}
	}
	if want := "slow: 1 of 2 seconds|slow: 2 of 2 seconds"; strings.Join(logs, "|") != want || !answered {
		t.Errorf("the call's POST stream carried log lines %q (answered %v), want %q and then the answer", logs, answered, want)
	}

	// The GET stream's priming event.
	gctx, gcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer gcancel()
	req := s.newRequest(gctx, http.MethodGet, nil)
	req.Header.Set("Accept", "text/event-stream")
	gresp, err := s.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer gresp.Body.Close()
	if gresp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: status %d", gresp.StatusCode)
	}
	br := bufio.NewReader(gresp.Body)
	var first []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("GET stream: %v after %q", err, first)
		}
		if line = strings.TrimSuffix(line, "\n"); line == "" {
			break
		}
		first = append(first, line)
	}
	if len(first) < 2 || !strings.HasPrefix(first[0], "id: ") || first[1] != "retry: 1000" {
		t.Errorf("the GET stream's first event is %q, want a priming event with an id and \"retry: 1000\"", first)
	}

	// The demo writes "slow: started" to its stderr: gemgate logs it with the user.
	found := false
	for _, rec := range ltLog(g) {
		if rec["msg"] == "worker stderr" && strings.Contains(rec["line"].(string), "slow: started") {
			found = true
			if rec["user"] != "alice" || rec["worker"] == nil || rec["worker"] == "" {
				t.Errorf("the worker's stderr line is logged with user %v, worker %v; want alice and the worker's id: %v", rec["user"], rec["worker"], rec)
			}
		}
	}
	if !found {
		t.Errorf("no \"worker stderr\" line with the demo's \"slow: started\" in gemgate's log")
	}
}
