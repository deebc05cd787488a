package test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rev11Post sends one JSON-RPC message as a client would, and returns the status, the
// session id the answer carries and the body.
func rev11Post(t *testing.T, url, token, session, body string) (int, string, string) {
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
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// rev11Open opens a legacy session through url.
func rev11Open(t *testing.T, url, token string) string {
	t.Helper()
	code, sid, body := rev11Post(t, url, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"rev11","version":"0"}}}`)
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", code, body)
	}
	if code, _, body := rev11Post(t, url, token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", code, body)
	}
	return sid
}

// TestRev11InSession503BehindHAProxyLosesTheSession runs the shipped haproxy.cfg (addresses
// changed only) in front of three replicas with max_workers 1. docs/scale-out.md says
// gemgate's 503s are all for work not started that another replica can take, and the
// shipped file retries every 503 on another replica. But a call in an open legacy session
// can be answered 503 (here: the user's per-user worker died, the session stays, and
// another user's session has taken the replica's last worker slot). HAProxy retries it on
// another replica, which does not know the session: the client gets 404, which the MCP
// transport says means the session is gone, and re-initializes, while its session is alive
// on its own replica. Expected: the client sees the 503 and its Retry-After (or the call is
// served), never a 404 for a live session.
func TestRev11InSession503BehindHAProxyLosesTheSession(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 3 replicas and HAProxy")
	}
	mcpPort, statsPort := scaleFreePort(t), scaleFreePort(t)
	publicURL := fmt.Sprintf("http://127.0.0.1:%d/mcp", mcpPort)
	var users []string
	for i := 1; i <= 12; i++ {
		users = append(users, fmt.Sprintf("rev%02d", i))
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
	var server string
	var pair []string
	for s, subs := range byServer {
		if len(subs) >= 2 {
			server, pair = s, subs[:2]
			break
		}
	}
	if server == "" {
		t.Fatalf("no two users on one server: %v", byServer)
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
	alice, bob := userOf(pair[0]), userOf(pair[1])
	if tokens[alice] == "" || tokens[bob] == "" {
		t.Fatalf("no tokens for subjects %v", pair)
	}

	sid := rev11Open(t, publicURL, tokens[alice])
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	if code, _, body := rev11Post(t, publicURL, tokens[alice], sid, call); code != http.StatusOK {
		t.Fatalf("alice's first call: %d %s", code, body)
	}
	// alice's worker dies; her session stays (on_worker_exit: keep).
	for _, pid := range childPIDs(home.cmd.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	pollUntil(t, 10*time.Second, "alice's worker gone", func() bool { return home.workers() == 0 })
	time.Sleep(500 * time.Millisecond)
	// bob, on the same replica, takes its only worker slot.
	rev11Open(t, publicURL, tokens[bob])

	code, _, body := rev11Post(t, publicURL, tokens[alice], sid, call)
	if code == http.StatusNotFound {
		t.Errorf("alice's call in her live session through the shipped balancer: 404 %s (the replica's 503 was retried on another replica, which does not know the session; the client now drops a live session)", strings.TrimSpace(body))
		h.logs.mu.Lock()
		lines := h.logs.lines
		if len(lines) > 2 {
			lines = lines[len(lines)-2:]
		}
		t.Logf("HAProxy's last lines:\n%s", strings.Join(lines, "\n"))
		h.logs.mu.Unlock()
	}
	// Her session is alive on her replica all along.
	if code, _, body := rev11Post(t, home.URL, tokens[alice], sid, `{"jsonrpc":"2.0","id":8,"method":"ping"}`); code == http.StatusNotFound {
		t.Errorf("alice's session on its own replica: %d %s", code, body)
	}
}
