package test

// Scale-out behind a real HAProxy with the shipped deploy/haproxy/haproxy.cfg: one gemgate
// issuer, three gemgate serve replicas sharing the balancer's public URL, and 30 users with
// three legacy sessions each through the Go SDK client. Every name here starts with "scale"
// so that other test files of this package cannot collide with it.

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gemgate/gemgate/internal/freeport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	scaleReplicas        = 3
	scaleUsers           = 30
	scaleSessionsPerUser = 3
)

// scaleFreePort is a loopback port nothing listens on right now (internal/freeport).
func scaleFreePort(t *testing.T) int {
	t.Helper()
	p, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// scaleIssuer runs `gemgate issuer` with the balancer's URL as audience and returns its URL and
// a token per user.
func scaleIssuer(t *testing.T, audience string, users []string) (string, map[string]string) {
	t.Helper()
	var info struct {
		Issuer string            `json:"issuer"`
		Tokens map[string]string `json:"tokens"`
	}
	launch(t, launchOpts{
		Args: []string{"issuer", "--json", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
			"--audience", audience, "--users", strings.Join(users, ",")},
		FirstStdout: func(_ *gemgate, line []byte) error { return json.Unmarshal(line, &info) },
	})
	return info.Issuer, info.Tokens
}

// scaleReplica runs one `gemgate serve` whose public URL is the balancer's; g.URL is its own
// address (for direct checks) and g.Metrics its metrics URL. It stops without a drain unless
// extra flags (which win over these) give it one.
func scaleReplica(t *testing.T, issuer, publicURL string, extra ...string) *gemgate {
	t.Helper()
	return launch(t, launchOpts{
		Args: append([]string{"serve", "--listen", "127.0.0.1:0", "--public-url", publicURL, "--issuer", issuer,
			"--metrics-listen", "127.0.0.1:0", "--log-format", "json", "--log-level", "info",
			"--worker", "command", "--worker-command", workerBin + " worker demo", "--data-dir", t.TempDir(),
			"--trusted-proxies", "127.0.0.1", "--drain-delay", "0s"}, extra...),
		LogLine: func(g *gemgate, line []byte) bool {
			var ev struct{ Msg, Addr, Listen string }
			if json.Unmarshal(line, &ev) != nil {
				return false
			}
			switch ev.Msg {
			case "metrics listening":
				g.Metrics = "http://" + ev.Addr + "/metrics"
			case "gemgate serving":
				g.URL = "http://" + ev.Listen + "/mcp"
				return true
			}
			return false
		},
	})
}

// scaleHAProxy is the running balancer: its log (one line per finished request) and stats.
type scaleHAProxy struct {
	cmd    *exec.Cmd
	logs   *logBuffer
	stats  string        // the stats page, CSV form
	exited chan struct{} // closed when haproxy has exited
}

// scaleConfig is the shipped haproxy.cfg with only its addresses changed: the MCP frontend,
// the stats frontend and the servers, in order. Any line it cannot find fails the test, so
// that the shipped file and this test cannot drift apart unnoticed.
func scaleConfig(t *testing.T, mcpPort, statsPort int, servers []string) string {
	t.Helper()
	b, err := os.ReadFile("../deploy/haproxy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b)
	replace := func(pattern, with string) {
		re := regexp.MustCompile(`(?m)` + pattern)
		if !re.MatchString(cfg) {
			t.Fatalf("the shipped haproxy.cfg has no line matching %q", pattern)
		}
		cfg = re.ReplaceAllLiteralString(cfg, with)
	}
	replace(`^    bind :8080$`, fmt.Sprintf("    bind 127.0.0.1:%d", mcpPort))
	replace(`^    bind 127\.0\.0\.1:8404$`, fmt.Sprintf("    bind 127.0.0.1:%d", statsPort))
	for i, addr := range servers {
		replace(fmt.Sprintf(`^    server gemgate%d gemgate%d:8080$`, i+1, i+1), fmt.Sprintf("    server gemgate%d %s", i+1, addr))
	}
	if n := strings.Count(cfg, "\n    server "); n != len(servers) {
		t.Fatalf("the shipped haproxy.cfg has %d servers, the test runs %d replicas", n, len(servers))
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startHAProxy runs haproxy in the foreground (-db) and waits until every server is UP.
func startHAProxy(t *testing.T, cfg string, statsPort int) *scaleHAProxy {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatal("haproxy is not installed (apt-get install haproxy; .ci/test installs it)")
	}
	if out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	h := &scaleHAProxy{cmd: exec.Command(bin, "-db", "-f", cfg), logs: &logBuffer{}, exited: make(chan struct{}),
		stats: fmt.Sprintf("http://127.0.0.1:%d/stats;csv", statsPort)}
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.cmd.Stderr = h.cmd.Stdout
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			h.logs.add(sc.Text())
		}
		h.cmd.Wait()
		close(h.exited)
	}()
	t.Cleanup(func() {
		h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.exited:
		case <-time.After(10 * time.Second):
			h.cmd.Process.Kill()
			t.Error("haproxy did not stop within 10s of SIGTERM")
		}
	})
	h.waitStatus(t, func(st map[string]string) bool {
		for i := 1; i <= scaleReplicas; i++ {
			if st[fmt.Sprintf("gemgate%d", i)] != "UP" {
				return false
			}
		}
		return true
	}, "every server UP")
	return h
}

// status is the check status of each server of the gemgate backend (UP, DOWN, ...).
func (h *scaleHAProxy) status() (map[string]string, error) {
	resp, err := ltMetricsClient.Get(h.stats)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	r := csv.NewReader(resp.Body)
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil || len(rows) == 0 {
		return nil, fmt.Errorf("stats: %v", err)
	}
	col := -1
	for i, name := range rows[0] {
		if name == "status" {
			col = i
		}
	}
	st := map[string]string{}
	for _, row := range rows[1:] {
		if col >= 0 && len(row) > col && row[0] == "gemgate" {
			st[row[1]] = row[col]
		}
	}
	return st, nil
}

func (h *scaleHAProxy) waitStatus(t *testing.T, ok func(map[string]string) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := h.status()
		if err == nil && ok(st) {
			return
		}
		select {
		case <-h.exited:
			t.Fatalf("haproxy exited: %v\nlog:\n%s", h.cmd.ProcessState, h.logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy: not %s within 60s: %v %v\nlog:\n%s", what, st, err, h.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scaleLogLine is a request in HAProxy's log: the server it went to and the subject it was
// hashed on (see log-format in the shipped file).
var scaleLogLine = regexp.MustCompile(` mcp gemgate/(\S+) .* sub="([^"]*)" `)

// serversBySubject maps every subject in HAProxy's log to the servers its requests went to.
func (h *scaleHAProxy) serversBySubject() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	h.logs.mu.Lock()
	defer h.logs.mu.Unlock()
	for _, l := range h.logs.lines {
		if m := scaleLogLine.FindStringSubmatch(l); m != nil {
			if out[m[2]] == nil {
				out[m[2]] = map[string]bool{}
			}
			out[m[2]][m[1]] = true
		}
	}
	return out
}

// scaleSession is one legacy session of one user, opened through the balancer.
type scaleSession struct {
	user string
	cs   *mcp.ClientSession
}

func scaleConnect(ctx context.Context, url, user, token string) (*scaleSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "gemgate-scale-" + user, Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClientWithToken(token)},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // a legacy session: its id is followed through the replicas
	if err != nil {
		return nil, fmt.Errorf("%s: connect: %w", user, err)
	}
	return &scaleSession{user: user, cs: cs}, nil
}

// whoami calls the demo's whoami tool and checks that the worker that answered is this
// user's, in this session: no user ever reaches another user's worker.
func (s *scaleSession) whoami(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		return err
	}
	var user, session string
	for _, f := range strings.Fields(text(res)) {
		if v, ok := strings.CutPrefix(f, "user="); ok {
			user = v
		}
		if v, ok := strings.CutPrefix(f, "session="); ok {
			session = v
		}
	}
	// GEMGATE_SESSION names the worker: the client's session with --worker-per session, the
	// user's shared worker (w...) with the default per-user workers.
	if user != s.user || (session != s.cs.ID() && !strings.HasPrefix(session, "w")) {
		return fmt.Errorf("CROSSED: %s in session %s reached the worker of %q in session %q", s.user, s.cs.ID(), user, session)
	}
	return nil
}

// replicaOf is the index of the replica that opened the session, from its "session opened"
// log line; -1 when none did.
// The replica's log reaches the test through a pipe, so the line may trail the answer: it
// is waited for a few seconds.
func scaleReplicaOf(replicas []*gemgate, session string) int {
	at := -1
	poll(5*time.Second, func() bool {
		for i, g := range replicas {
			for _, ev := range g.logEvents("session opened") {
				if ev["session"] == session {
					at = i
					return true
				}
			}
		}
		return false
	})
	return at
}

// TestScaleOutBehindHAProxy: every request of one user lands on one replica, users spread
// over the replicas, and when one replica dies (SIGKILL) its users' sessions get 404 and
// re-initialize on a survivor while every other user goes on without a single error.
func TestScaleOutBehindHAProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 3 replicas, HAProxy and 90 sessions")
	}
	began := time.Now()
	mcpPort, statsPort := scaleFreePort(t), scaleFreePort(t)
	publicURL := fmt.Sprintf("http://127.0.0.1:%d/mcp", mcpPort)
	var users []string
	for i := 1; i <= scaleUsers; i++ {
		users = append(users, fmt.Sprintf("user%02d", i))
	}
	issuer, tokens := scaleIssuer(t, publicURL, users)
	var replicas []*gemgate
	var addrs []string
	for range scaleReplicas {
		g := scaleReplica(t, issuer, publicURL)
		replicas = append(replicas, g)
		addrs = append(addrs, strings.TrimSuffix(strings.TrimPrefix(g.URL, "http://"), "/mcp"))
	}
	h := startHAProxy(t, scaleConfig(t, mcpPort, statsPort, addrs), statsPort)
	serverName := func(replica int) string { return fmt.Sprintf("gemgate%d", replica+1) }

	// No token, or one that is not a JWT: no subject to hash on, and the request still reaches
	// a replica, whose 401 names the metadata.
	for _, auth := range []string{"", "Bearer not-a-jwt", "Bearer a.b.c"} {
		req, _ := http.NewRequest(http.MethodPost, publicURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
			t.Errorf("Authorization %q through the balancer: %d %q, want gemgate's 401", auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}

	t.Logf("%v: issuer, replicas and haproxy up", time.Since(began).Round(time.Millisecond))
	// 30 users × 3 sessions, opened a few at a time.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sessions := map[string][]*scaleSession{}
	var mu sync.Mutex
	var open sync.WaitGroup
	var openErrs []error
	gate := make(chan struct{}, 8)
	for _, u := range users {
		for range scaleSessionsPerUser {
			open.Go(func() {
				gate <- struct{}{}
				defer func() { <-gate }()
				s, err := scaleConnect(ctx, publicURL, u, tokens[u])
				if err == nil {
					err = s.whoami(ctx)
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					openErrs = append(openErrs, err)
					return
				}
				sessions[u] = append(sessions[u], s)
			})
		}
	}
	open.Wait()
	t.Cleanup(func() {
		for _, ss := range sessions {
			for _, s := range ss {
				s.cs.Close()
			}
		}
	})
	if len(openErrs) > 0 {
		t.Fatalf("%d sessions failed, first: %v", len(openErrs), openErrs[0])
	}

	// Affinity: a user's sessions are all on one replica (HAProxy's log is checked at the end:
	// every request of a user went to that replica's server).
	home := map[string]int{}
	perReplica := make([]int, scaleReplicas)
	for _, u := range users {
		for _, s := range sessions[u] {
			r := scaleReplicaOf(replicas, s.cs.ID())
			if r < 0 {
				t.Fatalf("no replica logged session %s of %s", s.cs.ID(), u)
			}
			if prev, ok := home[u]; ok && prev != r {
				t.Errorf("%s has sessions on replicas %d and %d", u, prev+1, r+1)
			}
			home[u] = r
		}
		perReplica[home[u]]++
	}
	t.Logf("%v: users per replica: %v", time.Since(began).Round(time.Millisecond), perReplica)
	even := scaleUsers / scaleReplicas
	for i, n := range perReplica {
		if n < even/2 || n > even*2 {
			t.Errorf("replica %d has %d users, want within 2x of %d: %v", i+1, n, even, perReplica)
		}
		m := ltMetrics(t, replicas[i])
		if got := m["gemgate_sessions_open"]; got != float64(n*scaleSessionsPerUser) {
			t.Errorf("replica %d: gemgate_sessions_open = %v, want %d (%d users × %d sessions)", i+1, got, n*scaleSessionsPerUser, n, scaleSessionsPerUser)
		}
		// One worker per user and access mode: a user's three sessions share it.
		if got := ltSum(m, "gemgate_workers_running"); got != float64(n) {
			t.Errorf("replica %d: gemgate_workers_running = %v, want %d (one per user)", i+1, got, n)
		}
	}
	// Sessionless (2026-07-28) requests of the same users land on the same replica,
	// where the user's workers are: no other replica starts one.
	for _, u := range users {
		if err := scaleSessionlessWhoami(ctx, publicURL, u, tokens[u]); err != nil {
			t.Error(err)
		}
		if got := scaleSessionlessReplicas(replicas, u, 1); len(got) != 1 || !got[home[u]] {
			t.Errorf("%s's sessionless request was answered by replicas %v, want only %d", u, got, home[u]+1)
		}
	}
	// The demo worker speaks 2026-07-28 itself, so each user's sessionless requests have a
	// sessionless worker of their own next to the legacy one (docs/eras.md): one more per user
	// on its home replica, none anywhere else.
	for i, n := range perReplica {
		if got := ltSum(ltMetrics(t, replicas[i]), "gemgate_workers_running"); got != float64(2*n) {
			t.Errorf("replica %d: gemgate_workers_running = %v after the sessionless requests, want %d (a legacy and a sessionless worker for each of its %d users)", i+1, got, 2*n, n)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Load: every user calls whoami on each of its sessions, round after round, until stop or
	// its first error. An error is a failure for every user but the victim's (until moved).
	victim := home[users[0]]
	type userState struct {
		rounds int
		errs   []error // errors that fail the test
		hit    error   // the first error of a victim's user on its old sessions
	}
	states := map[string]*userState{}
	for _, u := range users {
		states[u] = &userState{}
	}
	stop := make(chan struct{})
	var load sync.WaitGroup
	run := func(u string, ss []*scaleSession, tolerated bool) chan struct{} {
		done := make(chan struct{})
		load.Go(func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				for _, s := range ss {
					if err = s.whoami(ctx); err != nil {
						break
					}
				}
				mu.Lock()
				switch {
				case err == nil:
					states[u].rounds++
				case tolerated:
					states[u].hit = err
				default:
					states[u].errs = append(states[u].errs, fmt.Errorf("session round %d: %w", states[u].rounds, err))
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
		return done
	}
	oldLoad := map[string]chan struct{}{}
	for _, u := range users {
		oldLoad[u] = run(u, sessions[u], home[u] == victim)
	}
	// waitRounds waits until every user has done at least min[u] rounds, or one failed.
	waitRounds := func(min map[string]int, what string) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			mu.Lock()
			done, failed := true, false
			for _, u := range users {
				done = done && states[u].rounds >= min[u]
				failed = failed || len(states[u].errs) > 0
			}
			mu.Unlock()
			if done || failed {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("not every user completed its rounds %s within 2 minutes", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	three := map[string]int{}
	for _, u := range users {
		three[u] = 3
	}
	waitRounds(three, "before the kill")
	t.Logf("%v: 3 rounds done, killing", time.Since(began).Round(time.Millisecond))

	// SIGKILL the victim mid-run; its workers must not outlive it.
	workers := childPIDs(replicas[victim].cmd.Process.Pid)
	replicas[victim].cmd.Process.Kill()
	select {
	case <-replicas[victim].done:
	case <-time.After(10 * time.Second):
		t.Fatal("the killed replica did not exit")
	}
	for _, pid := range workers {
		waitGone(t, pid)
	}
	h.waitStatus(t, func(st map[string]string) bool { return strings.HasPrefix(st[serverName(victim)], "DOWN") }, serverName(victim)+" DOWN")
	t.Logf("%v: killed replica is DOWN", time.Since(began).Round(time.Millisecond))
	mu.Lock()
	after := map[string]int{}
	for _, u := range users {
		after[u] = states[u].rounds + 3
	}
	mu.Unlock()

	// Each of the victim's users, all at once: its old sessions fail and are unknown to every
	// replica now (404, as the transport says); the Go SDK client re-initializes on one
	// survivor, and the user goes back to the load on the new sessions.
	var moved []string
	var moving sync.WaitGroup
	for _, u := range users {
		if home[u] != victim {
			continue
		}
		moved = append(moved, u)
		moving.Go(func() {
			// Its next sessionless request succeeds on a survivor, which starts the user's worker.
			if err := scaleSessionlessWhoami(ctx, publicURL, u, tokens[u]); err != nil {
				t.Errorf("after the kill: %v", err)
			} else if got := scaleSessionlessReplicas(replicas, u, 2); len(got) != 2 || !got[victim] {
				t.Errorf("%s's sessionless requests were answered by replicas %v, want the killed one and one survivor", u, got)
			}
			if err := scaleMove(ctx, u, tokens[u], publicURL, oldLoad[u], sessions[u], replicas, victim, func(fresh []*scaleSession) {
				mu.Lock()
				hit := states[u].hit
				mu.Unlock()
				if hit == nil {
					t.Errorf("%s's old sessions never failed", u)
				}
				for _, s := range fresh {
					t.Cleanup(func() { s.cs.Close() })
				}
				run(u, fresh, false)
			}); err != nil {
				t.Error(err)
			}
		})
	}
	moving.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%v: moved", time.Since(began).Round(time.Millisecond))
	waitRounds(after, "after the kill")
	t.Logf("%v: 3 more rounds done", time.Since(began).Round(time.Millisecond))
	close(stop)
	load.Wait()

	for _, u := range users {
		for _, err := range states[u].errs {
			t.Errorf("%s (replica %d) saw an error: %v", u, home[u]+1, err)
		}
	}
	t.Logf("killed replica %d; its users re-initialized elsewhere: %v", victim+1, moved)

	// HAProxy's own log: every request of a user who was not moved went to the user's server.
	bySub := h.serversBySubject()
	for _, u := range users {
		servers := bySub[u]
		if home[u] == victim {
			continue
		}
		if len(servers) != 1 || !servers[serverName(home[u])] {
			t.Errorf("HAProxy sent %s's requests to %v, want only %s", u, servers, serverName(home[u]))
		}
	}
}

// scaleRawCall sends one tools/call in session id through the balancer, as a client that kept
// the session id would, and returns the HTTP status.
func scaleRawCall(url, token, session string) (int, error) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// scaleMove takes one of the killed replica's users to a survivor: once its calls on the old
// sessions have failed (oldDone), each old session must be 404 through the balancer, and
// fresh sessions opened with the Go SDK client must all land on one survivor and answer.
func scaleMove(ctx context.Context, user, token, url string, oldDone <-chan struct{}, old []*scaleSession,
	replicas []*gemgate, victim int, resume func([]*scaleSession)) error {
	select {
	case <-oldDone:
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("%s's calls on the killed replica's sessions did not fail within 2 minutes", user)
	}
	for _, s := range old {
		if code, err := scaleRawCall(url, token, s.cs.ID()); err != nil || code != http.StatusNotFound {
			return fmt.Errorf("%s's session %s of the killed replica: status %d (%v) through the balancer, want 404", user, s.cs.ID(), code, err)
		}
	}
	var fresh []*scaleSession
	for range scaleSessionsPerUser {
		s, err := scaleConnect(ctx, url, user, token)
		if err == nil {
			fresh = append(fresh, s)
			err = s.whoami(ctx)
		}
		if err != nil {
			for _, s := range fresh {
				s.cs.Close()
			}
			return fmt.Errorf("%s re-initializing after the kill: %w", user, err)
		}
		if r, first := scaleReplicaOf(replicas, s.cs.ID()), scaleReplicaOf(replicas, fresh[0].cs.ID()); r < 0 || r == victim || r != first {
			return fmt.Errorf("%s's new session %d is on replica %d (the first on %d), want one survivor for all", user, len(fresh), r+1, first+1)
		}
	}
	resume(fresh)
	return nil
}

// scaleSessionlessWhoami calls whoami as a 2026-07-28 client (no session) through the balancer
// and checks that the user's own worker answered.
func scaleSessionlessWhoami(ctx context.Context, url, user, token string) error {
	a := drainRequest{url: url, token: token, sessionless: true, id: `"m"`, method: "tools/call", params: map[string]any{"name": "whoami"}}.do(ctx, nil)
	if a.err != nil || a.status != http.StatusOK || a.last()["result"] == nil {
		return fmt.Errorf("%s: sessionless whoami: %d %v %v", user, a.status, a.msgs, a.err)
	}
	if !strings.Contains(string(a.last()["result"]), "user="+user+" ") {
		return fmt.Errorf("CROSSED: %s's sessionless whoami answered %s", user, a.last()["result"])
	}
	return nil
}

// scaleSessionlessReplicas is the set of replicas that logged a 2026-07-28 tools/call of user,
// once at least want replicas have (or after a few seconds): the audit line is written after
// the answer, so it may trail it.
func scaleSessionlessReplicas(replicas []*gemgate, user string, want int) map[int]bool {
	var out map[int]bool
	poll(5*time.Second, func() bool {
		out = map[int]bool{}
		for i, g := range replicas {
			for _, ev := range g.logEvents("audit tools/call") {
				if ev["user"] == user && ev["era"] == "2026-07-28" {
					out[i] = true
				}
			}
		}
		return len(out) >= want
	})
	return out
}
