package test

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// balancerPost sends one JSON-RPC message as a client would, and returns the status, the
// response's headers and the body.
func balancerPost(t *testing.T, url, token, session, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

const balancerInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"balancer","version":"0"}}}`

// balancerOpen opens a legacy session through url.
func balancerOpen(t *testing.T, url, token string) string {
	t.Helper()
	code, h, body := balancerPost(t, url, token, "", balancerInitialize)
	sid := h.Get("Mcp-Session-Id")
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", code, body)
	}
	if code, _, body := balancerPost(t, url, token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", code, body)
	}
	return sid
}

// balancerRetried matches an HAProxy log line (the shipped log-format) of a request sent
// again to another replica: %rc, the retry count, is "+N" when it was redispatched.
var balancerRetried = regexp.MustCompile(` \d+/\d+/\d+/\d+/\+\d+ `)

// balancerLogLen is how many lines HAProxy has logged so far.
func balancerLogLen(h *scaleHAProxy) int {
	h.logs.mu.Lock()
	defer h.logs.mu.Unlock()
	return len(h.logs.lines)
}

// balancerLineAfter is HAProxy's log line of the first request of subject sub logged after
// the first from lines (HAProxy logs a request once it is answered).
func balancerLineAfter(t *testing.T, h *scaleHAProxy, from int, sub string) string {
	t.Helper()
	var line string
	pollUntil(t, 5*time.Second, "HAProxy's log line of the request", func() bool {
		h.logs.mu.Lock()
		defer h.logs.mu.Unlock()
		for _, l := range h.logs.lines[from:] {
			if strings.Contains(l, `sub="`+sub+`"`) {
				line = l
				return true
			}
		}
		return false
	})
	return line
}

// TestInSession503BehindHAProxyKeepsTheSession runs the shipped haproxy.cfg (addresses
// changed only) in front of three replicas with max_workers 1. A legacy session lives on one
// replica, and gemgate may answer a request of it 503 with Retry-After: here the user's
// worker died (on_worker_exit keep: the session stays) and another user's session has taken
// the replica's only worker slot. HAProxy must hand that 503 to the client: retried on
// another replica, which does not know the session, it would become a 404, which the MCP
// transport reads as "the session is gone", and the client would drop a live session. An
// initialize refused 503 on the same replica is still retried by HAProxy on another one, and
// succeeds there: only requests carrying Mcp-Session-Id are exempt from the 503 retry.
func TestInSession503BehindHAProxyKeepsTheSession(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 3 replicas and HAProxy")
	}
	mcpPort, statsPort := scaleFreePort(t), scaleFreePort(t)
	publicURL := fmt.Sprintf("http://127.0.0.1:%d/mcp", mcpPort)
	var users []string
	for i := 1; i <= 12; i++ {
		users = append(users, fmt.Sprintf("sess%02d", i))
	}
	issuer, tokens := scaleIssuer(t, publicURL, users)
	var replicas []*gemgate
	var addrs []string
	for range scaleReplicas {
		g := scaleReplica(t, issuer, publicURL, "--max-workers", "1", "--worker-per", "user")
		replicas = append(replicas, g)
		addrs = append(addrs, strings.TrimSuffix(strings.TrimPrefix(g.URL, "http://"), "/mcp"))
	}
	h := startHAProxy(t, scaleConfig(t, mcpPort, statsPort, addrs), statsPort)

	// Where each user hashes to: a GET without a session is 400 and starts nothing.
	for _, u := range users {
		req, _ := http.NewRequest(http.MethodGet, publicURL, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tokens[u])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	byServer := map[string][]string{}
	pollUntil(t, 10*time.Second, "every user in HAProxy's log", func() bool { return len(h.serversBySubject()) >= len(users) })
	for sub, servers := range h.serversBySubject() {
		for s := range servers {
			byServer[s] = append(byServer[s], sub)
		}
	}
	// Three users hashed to one replica (the hash is deterministic: same names, same ring).
	var server string
	var three []string
	for s, subs := range byServer {
		if len(subs) >= 3 {
			server, three = s, subs[:3]
			break
		}
	}
	if server == "" {
		t.Fatalf("no three users on one server: %v", byServer)
	}
	var n int
	fmt.Sscanf(server, "gemgate%d", &n)
	home := replicas[n-1]
	userOf := func(sub string) string {
		for _, u := range users {
			if strings.Contains(sub, u) {
				return u
			}
		}
		return sub
	}
	alice, bob, carol := userOf(three[0]), userOf(three[1]), userOf(three[2])
	if tokens[alice] == "" || tokens[bob] == "" || tokens[carol] == "" {
		t.Fatalf("no tokens for subjects %v", three)
	}

	sid := balancerOpen(t, publicURL, tokens[alice])
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	if code, _, body := balancerPost(t, publicURL, tokens[alice], sid, call); code != http.StatusOK {
		t.Fatalf("alice's first call: %d %s", code, body)
	}
	// alice's worker dies; her session stays (on_worker_exit: keep).
	for _, pid := range childPIDs(home.cmd.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	pollUntil(t, 10*time.Second, "alice's worker gone", func() bool { return home.workers() == 0 })
	time.Sleep(500 * time.Millisecond)
	// bob, on the same replica, takes its only worker slot.
	balancerOpen(t, publicURL, tokens[bob])

	// alice's call in her session: her replica can start no worker for it. The client gets
	// that 503 with its Retry-After, and HAProxy did not send the request anywhere else.
	from := balancerLogLen(h)
	code, hdr, body := balancerPost(t, publicURL, tokens[alice], sid, call)
	line := balancerLineAfter(t, h, from, three[0])
	switch {
	case code == http.StatusNotFound:
		t.Errorf("alice's call in her live session through the shipped balancer: 404 %s (the replica's 503 was retried on another replica, which does not know the session; the client now drops a live session)\nHAProxy: %s", strings.TrimSpace(body), line)
	case code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "":
		t.Errorf("alice's call in her session with no worker slot free: %d (Retry-After %q) %s, want 503 with Retry-After\nHAProxy: %s", code, hdr.Get("Retry-After"), strings.TrimSpace(body), line)
	}
	if !strings.Contains(line, "gemgate/"+server+" ") || balancerRetried.MatchString(line) {
		t.Errorf("alice's call was not answered by her own replica %s alone:\n%s", server, line)
	}
	// Her session is alive on her replica all along (its requests are 503 until a worker
	// slot frees, never 404).
	if code, _, body := balancerPost(t, home.URL, tokens[alice], sid, `{"jsonrpc":"2.0","id":8,"method":"ping"}`); code == http.StatusNotFound {
		t.Errorf("alice's session on its own replica: %d %s", code, body)
	}

	// carol's initialize, on the same replica, is refused there (no worker slot) before
	// anything started: HAProxy retries it on another replica, where it opens her session.
	if code, _, body := balancerPost(t, home.URL, tokens[carol], "", balancerInitialize); code != http.StatusServiceUnavailable {
		t.Fatalf("carol's initialize on her own replica with its worker slot taken: %d %s, want 503", code, body)
	}
	from = balancerLogLen(h)
	code, hdr, body = balancerPost(t, publicURL, tokens[carol], "", balancerInitialize)
	line = balancerLineAfter(t, h, from, three[2])
	if code != http.StatusOK || hdr.Get("Mcp-Session-Id") == "" {
		t.Errorf("carol's initialize through the shipped balancer: %d %s, want it retried on another replica and served\nHAProxy: %s", code, strings.TrimSpace(body), line)
	}
	if strings.Contains(line, "gemgate/"+server+" ") || !balancerRetried.MatchString(line) {
		t.Errorf("carol's initialize was not redispatched away from %s:\n%s", server, line)
	}
}
