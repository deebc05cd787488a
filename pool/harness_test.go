package pool

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/worker"
)

// waitFor bounds every wait of these tests.
const waitFor = 10 * time.Second

// scriptLauncher starts the test binary as the scripted worker (see main_test.go) through the
// real CommandLauncher. Its zero value starts the script worker; mode names another
// (POOL_TEST_WORKER), env adds to the worker's environment, and edit, if set, changes the
// launcher (a credential handed over, a command in front).
type scriptLauncher struct {
	mode string
	env  []string
	edit func(*worker.CommandLauncher)
}

func (l scriptLauncher) Launch(ctx context.Context, id worker.Identity) (worker.Launch, error) {
	exe, err := os.Executable()
	if err != nil {
		return worker.Launch{}, err
	}
	env := append([]string{"POOL_TEST_WORKER=" + cmp.Or(l.mode, "script"), "GORACE=atexit_sleep_ms=0"}, l.env...)
	cl := &worker.CommandLauncher{Command: []string{exe}, Env: env, StopGrace: time.Second}
	if l.edit != nil {
		l.edit(cl)
	}
	return cl.Launch(ctx, id)
}

func newTestPool(t *testing.T, s Settings) *Pool {
	t.Helper()
	p, err := New(Options{Settings: s, Launcher: scriptLauncher{}, InitTimeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// fakeCaller is a session as the pool sees it: what it was delivered, when it was last
// active, whether it has a stream, and why it was let go.
type fakeCaller struct {
	mu       sync.Mutex
	last     time.Time
	noStream bool
	got      []Delivery
	detached chan string
}

func newCaller(last time.Time) *fakeCaller {
	return &fakeCaller{last: last, detached: make(chan string, 1)}
}

func (c *fakeCaller) Deliver(d Delivery) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, d)
}

func (c *fakeCaller) LastActive() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

func (c *fakeCaller) CanTakeRequest() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.noStream
}

func (c *fakeCaller) Detached(reason string) {
	select {
	case c.detached <- reason:
	default:
	}
}

// deliveries are the messages delivered so far, decoded.
func (c *fakeCaller) deliveries(t *testing.T) []*jsonrpc.Message {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*jsonrpc.Message
	for _, d := range c.got {
		m, err := jsonrpc.Parse(d.Message, jsonrpc.Options{})
		if err != nil {
			t.Fatalf("delivered %q: %v", d.Message, err)
		}
		out = append(out, m)
	}
	return out
}

// request waits for the first worker request delivered to c.
func (c *fakeCaller) request(t *testing.T) (Delivery, *jsonrpc.Message) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		for _, d := range c.got {
			if d.Request {
				c.mu.Unlock()
				m, err := jsonrpc.Parse(d.Message, jsonrpc.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return d, m
			}
		}
		c.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no worker request delivered within %v", waitFor)
	return Delivery{}, nil
}

func (c *fakeCaller) requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, d := range c.got {
		if d.Request {
			n++
		}
	}
	return n
}

// session is one attached caller.
type session struct {
	m  *Member
	id Identity
	c  *fakeCaller
}

var sessionSeq atomic.Int64

// attach attaches a caller of user with the given client capabilities (a JSON object).
func attach(t *testing.T, p *Pool, user string, readOnly bool, caps string, c *fakeCaller) *session {
	t.Helper()
	id := Identity{Issuer: "https://issuer.test", Subject: "sub-" + user, User: user,
		ReadOnly: readOnly, Session: "s" + strconv.FormatInt(sessionSeq.Add(1), 10)}
	params := json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":` + caps + `,"clientInfo":{"name":"t","version":"0"}}`)
	m, _, err := p.Attach(t.Context(), Attach{Identity: id, Caller: c, Params: params})
	if err != nil {
		t.Fatalf("attach %s: %v", user, err)
	}
	return &session{m: m, id: id, c: c}
}

var callSeq atomic.Int64

// call sends a request; the error is the pool's refusal, if any.
func (s *session) call(t *testing.T, method string, params any) (*Call, error) {
	t.Helper()
	b, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	id := json.RawMessage(strconv.FormatInt(callSeq.Add(1), 10))
	return s.m.Call(t.Context(), Request{Message: &jsonrpc.Message{ID: id, Method: method, Params: b}, Identity: s.id})
}

func (s *session) tool(t *testing.T, name string, args any) *Call {
	t.Helper()
	c, err := s.call(t, "tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return c
}

// answer waits for a call's answer: its text content, or its error object as JSON.
func answer(t *testing.T, c *Call) string {
	t.Helper()
	select {
	case m := <-c.Result():
		if m.Error != nil {
			return string(m.Error)
		}
		var r struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(m.Result, &r); err != nil || len(r.Content) == 0 {
			return string(m.Result)
		}
		return r.Content[0].Text
	case <-time.After(waitFor):
		t.Fatalf("no answer within %v", waitFor)
		return ""
	}
}

// workers is the number of p's workers running or starting, as max_workers counts them.
func workers(p *Pool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// eventually waits for cond with a generous deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, waitFor)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func alive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// awaitStartWaiters waits until n callers wait in slot.acquire for a start under way.
func awaitStartWaiters(t *testing.T, n int) {
	t.Helper()
	eventually(t, "callers to wait for the start under way", func() bool {
		buf := make([]byte, 1<<20)
		waiting := 0
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			lines := strings.Split(g, "\n")
			if strings.Contains(lines[0], "[select") && len(lines) > 1 && strings.Contains(lines[1], "(*slot).acquire(") {
				waiting++
			}
		}
		return waiting >= n
	})
}
