package pool

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemgate/gemgate/worker"
)

// handedCredential is the credential the workers of these tests are handed.
const handedCredential = "handed-backend-credential-0123456789abcdefXYZ"

type handedCred struct{}

func (handedCred) Credential(context.Context, worker.Identity) (worker.Credential, error) {
	return worker.Credential{Token: handedCredential}, nil
}

// credLauncher is scriptLauncher with a credential handed to every worker, as
// worker_credential: exchange or static does.
var credLauncher = scriptLauncher{edit: func(cl *worker.CommandLauncher) {
	cl.WriteTimeout, cl.Credential = 500*time.Millisecond, handedCred{}
}}

// lockedLog is a log written by the pool's goroutines and read by the test.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// records are the log's JSON lines.
func (b *lockedLog) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(b.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// The two lines the pool logs when it refuses a worker's request, naming its method: the
// requests the clients leave unanswered are too many, or no session can take one (the
// worker's only caller has no stream open, and more than one call in flight, so that the
// request is not its call's).
var refusalLogs = map[string]struct {
	msg      string
	noStream bool
}{
	"too many":   {"worker has too many requests unanswered by the clients; refused", false},
	"no session": {`"answered_by":"gemgate"`, true}, // gemgate's own answer, audited
}

// requestFloodLog runs a worker that sends more requests than the clients may leave
// unanswered (maxWorkerRequests), each named by method, to a caller with a stream open or
// none, and returns gemgate's log once it has the refusal's line, msg.
func requestFloodLog(t *testing.T, method, msg string, noStream bool) string {
	var logs lockedLog
	p, err := New(Options{Launcher: credLauncher, InitTimeout: waitFor,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c := newCaller(time.Now())
	c.noStream = noStream
	a := attach(t, p, "mallory", false, `{}`, c)
	if noStream {
		a.tool(t, "hold", nil)
	}
	a.tool(t, "flood", map[string]any{"method": method, "n": maxWorkerRequests + 4})
	eventually(t, "the refusals logged", func() bool {
		return strings.Contains(logs.String(), msg)
	})
	return logs.String()
}

// The method of a worker's request, which the pool logs when it refuses the request, has
// the credential gemgate handed the worker replaced with [redacted], as every line of the
// worker's that gemgate logs (docs/security.md, "Output hygiene").
func TestWorkerRequestMethodIsRedactedInLog(t *testing.T) {
	for name, r := range refusalLogs {
		t.Run(name, func(t *testing.T) {
			log := requestFloodLog(t, "login with "+handedCredential, r.msg, r.noStream)
			for _, l := range strings.Split(log, "\n") {
				if strings.Contains(l, handedCredential) {
					t.Fatalf("the worker's credential is in gemgate's log:\n%.300s", l)
				}
			}
			if !strings.Contains(log, `"method":"login with [redacted]"`) {
				t.Fatalf("the refused request's method is not logged, redacted:\n%.1000s", log)
			}
		})
	}
}

// The method of a worker's request is clipped where the pool logs it, as every other text of
// a worker's is (a stderr or chatter line to 512 bytes): a worker's output reaches the log
// shared by every user's audit lines, and a method may be as long as a line, 16 MiB.
func TestWorkerRequestMethodIsClippedInLog(t *testing.T) {
	for name, r := range refusalLogs {
		t.Run(name, func(t *testing.T) {
			method := "x/" + strings.Repeat("A", 64<<10)
			log := requestFloodLog(t, method, r.msg, r.noStream)
			const bound = 4 << 10
			for _, l := range strings.Split(log, "\n") {
				if len(l) > bound {
					t.Fatalf("a log line of %d bytes (bound %d) from a worker's request method of %d bytes:\n%.200s...",
						len(l), bound, len(method), l)
				}
			}
		})
	}
}

// The pool's warnings about a worker's requests it refuses count against the worker's log
// rate, with its stderr and stdout lines (50 lines a second, bursts of 200): a worker that
// floods gemgate with requests gets no more lines into the log than one that floods its
// stderr.
func TestWorkerRequestFloodIsLoggedAtABoundedRate(t *testing.T) {
	var logs lockedLog
	p, err := New(Options{Launcher: scriptLauncher{}, InitTimeout: waitFor,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	a := attach(t, p, "mallory", false, `{}`, newCaller(time.Now()))
	const n = 5000
	start := time.Now()
	// The worker answers the call after its requests: gemgate has read them all once it
	// has the answer.
	answer(t, a.tool(t, "flood", map[string]any{"method": "x/flood", "n": n, "answer": true}))
	lines, elapsed := strings.Count(logs.String(), "\n"), time.Since(start)
	// The bucket lets through at most its burst and the rate times the time since start (the
	// +1: that product rounded down); the log holds a few lines besides, not of the bucket:
	// the worker's start, the one warning that its answers are dropped, and the counts of the
	// lines over the rate, ⌊s⌋+1 at most. (The bound of whole seconds of rate this replaces,
	// 200+50*(⌊s⌋+1), left those lines no room just before a whole second: 252 lines in 990 ms
	// failed its 250 under load.)
	if max := 200 + int(elapsed.Seconds()*50) + int(elapsed.Seconds()) + 4; lines > max {
		t.Fatalf("a worker's flood of %d requests made %d log lines in %v; its stderr would get at most %d",
			n, lines, elapsed.Round(time.Millisecond), max)
	}
	// The refusals not logged are counted, and the count logged by the worker's end at the
	// latest: with those logged, they make up every refusal.
	p.Close()
	refused, counted := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct {
			Msg   string
			Count int
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		switch {
		case strings.HasPrefix(rec.Msg, "worker has too many requests unanswered"):
			refused++
		case strings.HasSuffix(rec.Msg, "not logged: over the rate"):
			counted += rec.Count
		}
	}
	if want := n - maxWorkerRequests; refused+counted != want || counted == 0 {
		t.Fatalf("%d refusals logged and %d counted, want %d in all, some counted", refused, counted, want)
	}
}
