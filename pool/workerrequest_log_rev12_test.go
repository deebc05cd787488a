package pool

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// rev12Credential is the credential the workers of these tests are handed.
const rev12Credential = "rev12-backend-credential-0123456789abcdefXYZ"

type rev12Cred struct{}

func (rev12Cred) Credential(context.Context, Identity) (Credential, error) {
	return Credential{Token: rev12Credential}, nil
}

// rev12Launcher is scriptLauncher with a credential handed to every worker, as
// worker_credential: exchange or static does.
type rev12Launcher struct{}

func (rev12Launcher) Launch(ctx context.Context, id Identity) (Launch, error) {
	exe, err := os.Executable()
	if err != nil {
		return Launch{}, err
	}
	cl := &CommandLauncher{Command: []string{exe}, Env: []string{"POOL_TEST_WORKER=script", "GORACE=atexit_sleep_ms=0"},
		StopGrace: time.Second, WriteTimeout: 500 * time.Millisecond, Credential: rev12Cred{}}
	return cl.Launch(ctx, id)
}

type rev12Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *rev12Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *rev12Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// rev12FloodLog runs a worker that sends more requests than the clients may leave unanswered
// (maxWorkerRequests), each named by method, and returns gemgate's log.
func rev12FloodLog(t *testing.T, method string) string {
	var logs rev12Log
	p, err := New(Options{Launcher: rev12Launcher{}, InitTimeout: waitFor,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	a := attach(t, p, "mallory", false, `{}`, newCaller(time.Now()))
	a.tool(t, "flood", map[string]any{"method": method, "n": maxWorkerRequests + 4})
	eventually(t, "the refusals logged", func() bool {
		return strings.Contains(logs.String(), "too many requests unanswered")
	})
	return logs.String()
}

// A worker's line that quotes the credential gemgate handed it has the credential replaced
// with [redacted] wherever gemgate logs the line (docs/security.md, "Output hygiene"), and
// "No token, credential or Authorization header appears in a log" (DESIGN §9.7). The method
// of a worker's request is logged by the pool ("worker has too many requests unanswered by
// the clients; refused", and "no session can answer the worker's request") as the worker
// wrote it, never redacted.
func TestRev12WorkerRequestMethodQuotingTheCredentialIsRedacted(t *testing.T) {
	log := rev12FloodLog(t, "login with "+rev12Credential)
	if strings.Contains(log, rev12Credential) {
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, rev12Credential) {
				t.Fatalf("the worker's credential is in gemgate's log:\n%.300s", l)
			}
		}
	}
}

// Every other text of a worker that gemgate logs is cut to a bounded length (a stderr or
// chatter line to 512 bytes, the id of an answer never asked for, a refusal): a worker's
// output reaches the log shared by every user's audit lines. The method of a worker's
// request is logged whole, up to the 16 MiB line limit, once per request and with no rate
// limit: one line of the log per refused request, as long as the worker likes.
func TestRev12WorkerRequestMethodIsClippedInLog(t *testing.T) {
	method := "x/" + strings.Repeat("A", 64<<10)
	log := rev12FloodLog(t, method)
	const bound = 4 << 10
	for _, l := range strings.Split(log, "\n") {
		if len(l) > bound {
			t.Fatalf("a log line of %d bytes (bound %d) from a worker's request method of %d bytes:\n%.200s...",
				len(l), bound, len(method), l)
		}
	}
}

// A worker's stderr reaches the log at 50 lines a second (bursts of 200), "the log is every
// user's, audit lines included". A worker that sends requests instead gets one warning per
// request over the unanswered bound ("worker has too many requests unanswered by the
// clients; refused"), with no rate limit: the same flood, through another door.
func TestRev12WorkerRequestFloodIsLoggedAtABoundedRate(t *testing.T) {
	var logs rev12Log
	p, err := New(Options{Launcher: scriptLauncher{}, InitTimeout: waitFor,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	a := attach(t, p, "mallory", false, `{}`, newCaller(time.Now()))
	const n = 5000
	a.tool(t, "flood", map[string]any{"method": "x/flood", "n": n})
	start := time.Now()
	time.Sleep(2 * time.Second)
	lines := strings.Count(logs.String(), "\n")
	if max := 200 + int(time.Since(start).Seconds()+1)*50; lines > max {
		t.Fatalf("a worker's flood of %d requests made %d log lines in %v; its stderr would get at most %d",
			n, lines, time.Since(start).Round(time.Millisecond), max)
	}
}
