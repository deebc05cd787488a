package test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	crossSessions = 50
	crossCalls    = 100
	crossInFlight = 4 // concurrent calls per session, so ids are correlated, not just ordered
)

// payloadAlphabet gives each session its own one-byte payload.
const payloadAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// crossSize spreads the sizes of one session's calls from 1 byte to 1 MiB: a 1-byte call in
// every session, a 1 MiB call in every fifth, four calls of 32-128 KiB, the rest log-spread
// from 16 bytes to 16 KiB, so that the run stays near a minute under the race detector
// (every process here is race-instrumented, which makes large JSON costly).
func crossSize(s, c int) int {
	switch {
	case c == 0:
		return 1
	case c == 1 && s%5 == 0:
		return 1 << 20
	case c%25 == 2:
		return 32<<10 + (s*7919+c*104729)%(96<<10)
	default:
		exp := 4 + (s*31+c*17)%10 // 2^4 .. 2^13
		return 1<<exp + (s*c)%(1<<exp)
	}
}

// crossPayload is distinct for every (session, call): a tag, then filler that depends on
// both, cut to size. One-byte payloads differ between sessions.
func crossPayload(s, c, size int) string {
	if size == 1 {
		return string(payloadAlphabet[s%len(payloadAlphabet)])
	}
	tag := fmt.Sprintf("s%02d.c%03d|", s, c)
	var b strings.Builder
	b.Grow(size + 64)
	b.WriteString(tag)
	for i := 0; b.Len() < size; i++ {
		b.WriteByte(payloadAlphabet[(s*13+c*7+i)%len(payloadAlphabet)])
	}
	return b.String()[:size]
}

func TestCrossTalk(t *testing.T) {
	t.Parallel()
	cpuBound(t)
	if testing.Short() {
		t.Skip("cross-talk moves about 40 MiB through 50 workers")
	}
	// The sizes really span 1 byte to 1 MiB and every payload is distinct.
	seen := map[string]bool{}
	var total int64
	minSize, maxSize := 1<<30, 0
	for s := range crossSessions {
		for c := range crossCalls {
			n := crossSize(s, c)
			total += int64(n)
			minSize, maxSize = min(minSize, n), max(maxSize, n)
			p := crossPayload(s, c, n)
			if len(p) != n || seen[p] {
				t.Fatalf("payload (%d,%d) is not distinct or has size %d, want %d", s, c, len(p), n)
			}
			seen[p] = true
		}
	}
	if minSize != 1 || maxSize != 1<<20 {
		t.Fatalf("sizes span %d..%d, want 1..1MiB", minSize, maxSize)
	}
	seen = nil
	t.Logf("%d sessions x %d calls, %.1f MiB of payload each way", crossSessions, crossCalls, float64(total)/(1<<20))

	// This is the per-session version: 50 workers, one per session.
	g := startDev(t, "--max-sessions", "200", "--max-sessions-per-user", "200", "--worker-start-rate", "0", "--worker-per", "session")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	var (
		tally crossTally
		wg    sync.WaitGroup
	)
	sessions := make([]*mcp.ClientSession, crossSessions)
	for s := range crossSessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("crosstalk-%d", s), Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.URL, HTTPClient: httpClientWithToken(g.Tokens["alice"])}, nil)
			if err != nil {
				t.Errorf("session %d: connect: %v", s, err)
				tally.failed.Add(crossCalls)
				return
			}
			sessions[s] = cs
			tally.echo(ctx, t, cs, s, crossCalls, crossInFlight, crossSize)
		}()
	}
	wg.Wait()
	t.Logf("%d calls answered in %v", tally.answered.Load(), time.Since(start).Round(time.Millisecond))
	tally.check(t, crossSessions*crossCalls)
	if n := g.workers(); n != crossSessions {
		t.Errorf("gemgate has %d workers with %d sessions open, want %d", n, crossSessions, crossSessions)
	}

	// Every session ends with DELETE (the SDK's Close), and then no worker is left.
	pids := childPIDs(g.cmd.Process.Pid)
	for _, cs := range sessions {
		if cs != nil {
			if err := cs.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	}
	g.waitWorkers(t, 0, 20*time.Second)
	for _, pid := range pids {
		waitGone(t, pid)
	}
	// A session's worker is let go before its end is logged: wait for the lines, then count.
	ended := func() int { return len(g.logEvents("session ended")) }
	pollUntil(t, 10*time.Second, fmt.Sprintf("%d \"session ended\" log lines", crossSessions), func() bool { return ended() >= crossSessions })
	if n := ended(); n != crossSessions {
		t.Errorf("%d \"session ended\" log lines, want %d", n, crossSessions)
	}
}

func TestShutdownLeavesNoWorker(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	for range 3 {
		cs := connect(t, g.URL, g.Tokens["alice"], nil)
		callTool(t, cs, "echo", map[string]any{"text": "x"})
	}
	// One call still running when the shutdown begins.
	busy := connect(t, g.URL, g.Tokens["alice"], nil)
	go busy.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 60}})
	g.waitWorkers(t, 1, 10*time.Second)                     // alice's four sessions share her worker
	puWaitStarted(t, g, "slow: started", 1, 20*time.Second) // the call is running at the worker
	pids := childPIDs(g.cmd.Process.Pid)
	t0 := time.Now()
	g.stop(t) // SIGTERM; checks exit 0
	t.Logf("stop took %v", time.Since(t0))
	if g.cmd.ProcessState == nil || !g.cmd.ProcessState.Exited() || g.cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("gemgate state after SIGTERM: %v", g.cmd.ProcessState)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("worker %d outlived gemgate's shutdown", pid)
		}
	}
}

// crossTally counts what echo calls got back: their own text, another's (cross-talk), or an
// error.
type crossTally struct{ answered, wrong, failed atomic.Int64 }

// echo sends calls echo calls on session s, inFlight at a time, each with a payload of its
// own (crossPayload, of size(s, c) bytes), and tallies the answers.
func (n *crossTally) echo(ctx context.Context, t *testing.T, cs *mcp.ClientSession, s, calls, inFlight int, size func(s, c int) int) {
	next := make(chan int)
	var cw sync.WaitGroup
	for range inFlight {
		cw.Go(func() {
			for c := range next {
				want := crossPayload(s, c, size(s, c))
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": want}})
				switch {
				case err != nil:
					n.failed.Add(1)
					t.Errorf("session %d call %d: %v", s, c, err)
				case res.IsError || text(res) != want:
					n.wrong.Add(1)
					got := text(res)
					t.Errorf("session %d call %d (%d bytes): got %d bytes starting %.24q", s, c, len(want), len(got), got)
				default:
					n.answered.Add(1)
				}
			}
		})
	}
	for c := range calls {
		next <- c
	}
	close(next)
	cw.Wait()
}

// check: every one of want calls got its own answer.
func (n *crossTally) check(t *testing.T, want int) {
	t.Helper()
	if n.answered.Load() != int64(want) {
		t.Errorf("%d of %d answers matched their request (%d wrong, %d failed)", n.answered.Load(), want, n.wrong.Load(), n.failed.Load())
	}
}
