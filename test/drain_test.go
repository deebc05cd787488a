package test

// Graceful drain of one replica behind the shipped HAProxy configuration: SIGTERM under load
// loses nothing that reached the replica. Every name here starts with "drain".

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	drainUsers = 12
	drainDelay = 3 * time.Second
	drainGrace = 5 * time.Second
)

// drainAnswer is one request's HTTP answer with the JSON-RPC messages in it (JSON body or SSE
// events), the last being the answer.
type drainAnswer struct {
	status int
	header http.Header
	msgs   []map[string]json.RawMessage
	err    error
}

func (a drainAnswer) last() map[string]json.RawMessage {
	if len(a.msgs) == 0 {
		return nil
	}
	return a.msgs[len(a.msgs)-1]
}

// drainRequest is one MCP POST: legacy when session is set, 2026-07-28 when it is not and
// the body is a sessionless request, initialize otherwise.
type drainRequest struct {
	url, token, session string
	sessionless         bool
	id, method          string
	params              map[string]any
	sse                 bool // Accept text/event-stream too
}

// do sends r and reads the whole answer; first, if set, gets each message as it arrives (to
// tell when a slow call has reached its worker).
func (r drainRequest) do(ctx context.Context, first chan<- struct{}) drainAnswer {
	params := r.params
	if params == nil {
		params = map[string]any{}
	}
	if r.sessionless {
		meta := map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "drain", "version": "1"},
		}
		if first != nil {
			meta["progressToken"] = "p-" + r.id
		}
		params["_meta"] = meta
	} else if first != nil {
		params["_meta"] = map[string]any{"progressToken": "p-" + r.id}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(r.id), "method": r.method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return drainAnswer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if r.sse {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	switch {
	case r.session != "":
		req.Header.Set("Mcp-Session-Id", r.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	case r.sessionless:
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", r.method)
		if name, ok := params["name"].(string); ok {
			req.Header.Set("Mcp-Name", name)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return drainAnswer{err: err}
	}
	defer resp.Body.Close()
	a := drainAnswer{status: resp.StatusCode, header: resp.Header}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			line = d
		}
		var m map[string]json.RawMessage
		if len(line) > 0 && line[0] == '{' && json.Unmarshal(line, &m) == nil {
			a.msgs = append(a.msgs, m)
			if first != nil {
				close(first)
				first = nil
			}
		}
	}
	a.err = sc.Err()
	return a
}

// drainHomes asks HAProxy where each user goes, without starting anything there: a GET
// without a session id is refused (400) by the replica before any worker is involved, and
// HAProxy's log names the server per subject.
func drainHomes(t *testing.T, h *scaleHAProxy, url string, tokens map[string]string, users []string) map[string]string {
	t.Helper()
	for _, u := range users {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tokens[u])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("GET without a session for %s: %d, want 400", u, resp.StatusCode)
		}
	}
	homes := map[string]string{}
	deadline := time.Now().Add(30 * time.Second)
	for len(homes) < len(users) {
		for sub, servers := range h.serversBySubject() {
			for s := range servers {
				homes[sub] = s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("HAProxy logged %d of %d users", len(homes), len(users))
		}
		time.Sleep(50 * time.Millisecond) // HAProxy logs a request once it has finished
	}
	return homes
}

// drainWaitLog waits for a log line msg of g.
func drainWaitLog(t *testing.T, g *gemgate, msg string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(g.logEvents(msg)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no %q log line within 30s\nlogs:\n%s", msg, g.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDrainUnderLoad: SIGTERM one of three replicas while its users have legacy sessions and
// sessionless requests in flight, slow calls among them. Nothing that reached it is lost: each
// call gets its answer, or (cut by the grace's end) a JSON-RPC error for its id; new work
// there gets a 503 with Retry-After that HAProxy retries on a survivor; the replica leaves
// HAProxy's ring and exits 0 within drain_delay + shutdown_grace + a bound.
func TestDrainUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 3 replicas and HAProxy")
	}
	began := time.Now()
	mcpPort, statsPort := scaleFreePort(t), scaleFreePort(t)
	publicURL := fmt.Sprintf("http://127.0.0.1:%d/mcp", mcpPort)
	var users []string
	for i := 1; i <= drainUsers; i++ {
		users = append(users, fmt.Sprintf("drain%02d", i))
	}
	issuer, tokens := scaleIssuer(t, publicURL, users)
	var replicas []*gemgate
	var addrs []string
	byServer := map[string]int{}
	for i := range scaleReplicas {
		g := scaleReplica(t, issuer, publicURL, "--drain-delay", drainDelay.String(), "--shutdown-grace", drainGrace.String())
		replicas = append(replicas, g)
		addrs = append(addrs, strings.TrimSuffix(strings.TrimPrefix(g.URL, "http://"), "/mcp"))
		byServer[fmt.Sprintf("gemgate%d", i+1)] = i
	}
	h := startHAProxy(t, scaleConfig(t, mcpPort, statsPort, addrs), statsPort)
	homes := drainHomes(t, h, publicURL, tokens, users)

	// The victim is the replica with the most users; two of them stay fresh (no worker
	// anywhere) to be new work during the drain, the others get a legacy session and a worker.
	count := map[int][]string{}
	for _, u := range users {
		count[byServer[homes[u]]] = append(count[byServer[homes[u]]], u)
	}
	victim := 0
	for i := range scaleReplicas {
		if len(count[i]) > len(count[victim]) {
			victim = i
		}
	}
	if len(count[victim]) < 4 {
		t.Fatalf("the busiest replica has %d users, the test needs 4: %v", len(count[victim]), count)
	}
	freshLegacy, freshSessionless, home := count[victim][0], count[victim][1], count[victim][2:]
	other := count[(victim+1)%scaleReplicas]
	if len(other) == 0 {
		other = count[(victim+2)%scaleReplicas]
	}
	t.Logf("%v: victim replica %d with users %v", time.Since(began).Round(time.Millisecond), victim+1, count[victim])

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sessions := map[string]*scaleSession{}
	for _, u := range home {
		s, err := scaleConnect(ctx, publicURL, u, tokens[u])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.cs.Close() })
		if r := scaleReplicaOf(replicas, s.cs.ID()); r != victim {
			t.Fatalf("%s's session is on replica %d, want %d", u, r+1, victim+1)
		}
		sessions[u] = s
	}

	// Calls in flight at the signal, all on the victim's users: slow legacy and sessionless calls
	// that finish within the grace, and one of each that outlasts it.
	type flight struct {
		name    string
		req     drainRequest
		outlast bool // cut by the grace's end: a JSON-RPC error for its id
		first   chan struct{}
		answer  chan drainAnswer
	}
	slow := func(seconds int) map[string]any {
		return map[string]any{"name": "slow", "arguments": map[string]any{"seconds": seconds, "progress": true}}
	}
	u0, u1 := home[0], home[len(home)-1]
	flights := []*flight{
		{name: "legacy slow call", req: drainRequest{url: publicURL, token: tokens[u0], session: sessions[u0].cs.ID(), id: `"L4"`, method: "tools/call", params: slow(4), sse: true}},
		{name: "sessionless slow call", req: drainRequest{url: publicURL, token: tokens[u1], sessionless: true, id: `"M4"`, method: "tools/call", params: slow(4), sse: true}},
		{name: "legacy call past the grace", req: drainRequest{url: publicURL, token: tokens[u0], session: sessions[u0].cs.ID(), id: `"L60"`, method: "tools/call", params: slow(60), sse: true}, outlast: true},
		{name: "sessionless call past the grace", req: drainRequest{url: publicURL, token: tokens[u1], sessionless: true, id: `"M60"`, method: "tools/call", params: slow(60), sse: true}, outlast: true},
	}
	for _, f := range flights {
		f.first, f.answer = make(chan struct{}), make(chan drainAnswer, 1)
		go func() { f.answer <- f.req.do(ctx, f.first) }()
	}
	for _, f := range flights {
		select {
		case <-f.first: // its first progress: the call runs at the worker
		case a := <-f.answer:
			t.Fatalf("%s ended before the signal: %d %v %v", f.name, a.status, a.msgs, a.err)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s sent no progress", f.name)
		}
	}

	// Load that keeps running through the drain: the victim's users with a worker there call
	// whoami the sessionless way, round after round. Each answer is a result or a retryable 503.
	stop := make(chan struct{})
	var load sync.WaitGroup
	var mu sync.Mutex
	var loadErrs []string
	rounds := map[int]int{}
	for i, u := range home {
		load.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				a := drainRequest{url: publicURL, token: tokens[u], sessionless: true, id: fmt.Sprintf(`"w%d"`, n), method: "tools/call",
					params: map[string]any{"name": "whoami"}}.do(ctx, nil)
				mu.Lock()
				switch {
				case a.err == nil && a.status == http.StatusOK && a.last()["result"] != nil:
					rounds[i]++
				case a.err == nil && a.status == http.StatusServiceUnavailable && a.header.Get("Retry-After") != "":
					// Retryable: the next round is the retry.
				default:
					loadErrs = append(loadErrs, fmt.Sprintf("%s round %d: %d %v %v", u, n, a.status, a.msgs, a.err))
				}
				mu.Unlock()
			}
		})
	}
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		load.Wait()
	})

	workers := childPIDs(replicas[victim].cmd.Process.Pid)
	// The replica exits by itself: its exit is received here or below, before the harness's
	// cleanup looks at the process.
	exited := false
	t.Cleanup(func() {
		if !exited {
			select {
			case <-replicas[victim].done:
			case <-time.After(drainDelay + drainGrace + 30*time.Second):
			}
		}
	})
	signalled := time.Now()
	replicas[victim].cmd.Process.Signal(syscall.SIGTERM)
	drainWaitLog(t, replicas[victim], "draining")
	t.Logf("%v: SIGTERM sent, draining", time.Since(began).Round(time.Millisecond))

	// Straight to the draining replica, its listener still open: not ready, new work refused
	// with a retryable 503, its own users served.
	direct := replicas[victim].URL
	resp, err := ltMetricsClient.Get(strings.TrimSuffix(direct, "/mcp") + "/readyz")
	if err != nil {
		t.Fatalf("/readyz while draining: %v (the listener must stay open for drain_delay)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining: %d, want 503", resp.StatusCode)
	}
	for _, tc := range []struct {
		name string
		req  drainRequest
		want int
	}{
		{"initialize", drainRequest{url: direct, token: tokens[freshLegacy], id: `"i"`, method: "initialize",
			params: map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "d", "version": "1"}}}, http.StatusServiceUnavailable},
		{"sessionless request of a user without a worker here", drainRequest{url: direct, token: tokens[other[0]], sessionless: true, id: `"o"`, method: "tools/list"}, http.StatusServiceUnavailable},
		{"sessionless request of a user whose worker is here", drainRequest{url: direct, token: tokens[u1], sessionless: true, id: `"h"`, method: "tools/list"}, http.StatusOK},
	} {
		a := tc.req.do(ctx, nil)
		if a.err != nil || a.status != tc.want {
			t.Errorf("%s, straight to the draining replica: %d %v, want %d", tc.name, a.status, a.err, tc.want)
			continue
		}
		if tc.want == http.StatusServiceUnavailable && (a.header.Get("Retry-After") == "" || a.last()["error"] == nil || string(a.last()["id"]) != tc.req.id) {
			t.Errorf("%s: the 503 lacks Retry-After or a JSON-RPC error for id %s: %v %v", tc.name, tc.req.id, a.header, a.msgs)
		}
	}

	// Through HAProxy, still during the drain: new work for the victim's fresh users is refused
	// there and retried by HAProxy on a survivor, so the client sees no error at all.
	if time.Since(signalled) >= drainDelay {
		t.Logf("warning: the drain checks ran past drain_delay (%v)", time.Since(signalled))
	}
	// The new session opens on a survivor; its next requests still hash to the draining
	// replica (404) until HAProxy takes it out, so the SDK client connects only after that.
	initialize := drainRequest{url: publicURL, token: tokens[freshLegacy], id: `"i2"`, method: "initialize",
		params: map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "d", "version": "1"}}}
	if a := initialize.do(ctx, nil); a.err != nil || a.status != http.StatusOK || a.last()["result"] == nil {
		t.Errorf("initialize of a new user during the drain, through HAProxy: %d %v %v", a.status, a.msgs, a.err)
	} else if r := scaleReplicaOf(replicas, a.header.Get("Mcp-Session-Id")); r < 0 || r == victim {
		t.Errorf("the new session went to replica %d, want a survivor", r+1)
	}
	if a := (drainRequest{url: publicURL, token: tokens[freshSessionless], sessionless: true, id: `"f"`, method: "tools/call", params: map[string]any{"name": "whoami"}}).do(ctx, nil); a.err != nil || a.status != http.StatusOK || a.last()["result"] == nil {
		t.Errorf("a sessionless request of a new user during the drain, through HAProxy: %d %v %v", a.status, a.msgs, a.err)
	}

	// HAProxy takes the replica out; its users' next requests succeed on a survivor.
	h.waitStatus(t, func(st map[string]string) bool {
		return strings.HasPrefix(st[fmt.Sprintf("gemgate%d", victim+1)], "DOWN")
	}, "the draining replica DOWN")
	t.Logf("%v: draining replica DOWN at HAProxy", time.Since(began).Round(time.Millisecond))
	fresh, err := scaleConnect(ctx, publicURL, freshLegacy, tokens[freshLegacy])
	if err != nil {
		t.Fatalf("a new session once the replica is out: %v", err)
	}
	t.Cleanup(func() { fresh.cs.Close() })
	if err := fresh.whoami(ctx); err != nil {
		t.Error(err)
	}
	for _, u := range home {
		a := drainRequest{url: publicURL, token: tokens[u], sessionless: true, id: `"after"`, method: "tools/call", params: map[string]any{"name": "whoami"}}.do(ctx, nil)
		if a.err != nil || a.status != http.StatusOK || a.last()["result"] == nil || !strings.Contains(string(a.last()["result"]), "user="+u) {
			t.Errorf("%s after the replica left the ring: %d %v %v", u, a.status, a.msgs, a.err)
		}
	}

	// Every call that was in flight at the signal got its answer.
	for _, f := range flights {
		var a drainAnswer
		select {
		case a = <-f.answer:
		case <-time.After(drainDelay + drainGrace + 30*time.Second):
			t.Fatalf("%s never ended", f.name)
		}
		last := a.last()
		switch {
		case a.err != nil || last == nil || string(last["id"]) != f.req.id:
			t.Errorf("%s was lost: status %d, err %v, messages %v", f.name, a.status, a.err, a.msgs)
		case f.outlast && last["error"] == nil:
			t.Errorf("%s outlasted the grace but got %s", f.name, last["result"])
		case !f.outlast && last["result"] == nil:
			t.Errorf("%s should have finished within the grace, got %s", f.name, last["error"])
		}
		if f.outlast && a.status == http.StatusServiceUnavailable {
			t.Errorf("%s got a 503: a balancer would run the call again elsewhere", f.name)
		}
	}

	// The replica exits 0 within drain_delay + shutdown_grace + a bound, its workers gone.
	select {
	case err := <-replicas[victim].done:
		exited = true
		if err != nil {
			t.Errorf("the drained replica exited with %v", err)
		}
	case <-time.After(drainDelay + drainGrace + 15*time.Second):
		t.Fatalf("the replica did not exit within drain_delay + shutdown_grace + 15s\nlogs:\n%s", replicas[victim].logs)
	}
	if took := time.Since(signalled); took > drainDelay+drainGrace+10*time.Second {
		t.Errorf("the replica took %v to exit", took)
	}
	for _, pid := range workers {
		waitGone(t, pid)
	}
	close(stop)
	load.Wait()
	for _, e := range loadErrs {
		t.Errorf("load: %s", e)
	}
	for i, u := range home {
		if rounds[i] == 0 {
			t.Errorf("%s completed no call during the test", u)
		}
	}
	t.Logf("%v: done; rounds %v", time.Since(began).Round(time.Millisecond), rounds)
}
