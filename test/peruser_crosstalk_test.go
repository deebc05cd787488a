package test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The per-user cross-talk run: 50 sessions of one user share ONE worker, each sending 100
// echo calls with payloads distinct per (session, call), puInFlight at a time. 50 x 4 = 200
// calls may be at the worker at once, beyond the default max_calls_per_worker of 64 (which
// counts running and queued calls), so the test raises it with --max-calls-per-worker: it
// proves multiplexing, not the limit (the limit has its own tests).
const (
	puSessions = 50
	puCalls    = 100
	puInFlight = 4
	puMaxCalls = puSessions * puInFlight
)

// puSize keeps the run well under a minute under -race on 2 cores: a 1-byte call in every
// session, a 256 KiB call in every tenth session, two calls of 8-40 KiB per session, the rest
// log-spread from 16 bytes to 4 KiB.
func puSize(s, c int) int {
	switch {
	case c == 0:
		return 1
	case c == 1 && s%10 == 0:
		return 256 << 10
	case c%50 == 2:
		return 8<<10 + (s*7919+c*104729)%(32<<10)
	default:
		exp := 4 + (s*31+c*17)%9 // 2^4 .. 2^12
		return 1<<exp + (s*c)%(1<<exp)
	}
}

// TestPerUserCrossTalk: every answer of 5000 calls from 50 sessions of one user over one
// worker is the answer to that very call, none is lost, and the process table shows one
// worker child for the whole run; every session's log line and whoami name that worker.
func TestPerUserCrossTalk(t *testing.T) {
	t.Parallel()
	cpuBound(t)
	seen := map[string]bool{}
	for s := range puSessions {
		for c := range puCalls {
			p := crossPayload(s, c, puSize(s, c))
			if seen[p] {
				t.Fatalf("payload (%d,%d) is not distinct", s, c)
			}
			seen[p] = true
		}
	}
	seen = nil

	g := startDev(t, "--max-sessions", "200", "--max-sessions-per-user", "200",
		"--max-calls-per-worker", fmt.Sprint(puMaxCalls))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The first session starts the worker; the process table is sampled from then on.
	first := connect(t, g.URL, g.Tokens["alice"], nil)
	g.waitWorkers(t, 1, 10*time.Second)
	pid := childPIDs(g.cmd.Process.Pid)[0]
	var maxWorkers, samples atomic.Int64
	sampled := make(chan struct{})
	stopSampling := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
				n := int64(g.workers())
				samples.Add(1)
				for m := maxWorkers.Load(); n > m && !maxWorkers.CompareAndSwap(m, n); m = maxWorkers.Load() {
				}
			}
		}
	}()

	start := time.Now()
	var tally crossTally
	var wg sync.WaitGroup
	sessions := make([]*mcp.ClientSession, puSessions)
	sessions[0] = first
	for s := range puSessions {
		wg.Go(func() {
			cs := sessions[s]
			if cs == nil {
				client := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("peruser-%d", s), Version: "1"}, nil)
				var err error
				cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.URL, HTTPClient: httpClientWithToken(g.Tokens["alice"])}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				if err != nil {
					t.Errorf("session %d: connect: %v", s, err)
					tally.failed.Add(puCalls)
					return
				}
				sessions[s] = cs
			}
			tally.echo(ctx, t, cs, s, puCalls, puInFlight, puSize)
		})
	}
	wg.Wait()
	close(stopSampling)
	<-sampled
	t.Logf("%d calls answered in %v; %d samples of the process table", tally.answered.Load(), time.Since(start).Round(time.Millisecond), samples.Load())
	tally.check(t, puSessions*puCalls)
	if m := maxWorkers.Load(); m != 1 || samples.Load() == 0 {
		t.Errorf("up to %d worker processes during the run (%d samples), want exactly 1", m, samples.Load())
	}
	if pids := childPIDs(g.cmd.Process.Pid); len(pids) != 1 || pids[0] != pid {
		t.Errorf("worker processes after the run: %v, want just %d", pids, pid)
	}

	// Every session names the same worker: in gemgate's log (pid and worker id) and in the
	// worker's own answer (whoami reports the worker id it was started with).
	var worker string
	for s, cs := range sessions {
		if cs == nil {
			continue
		}
		p, w := puOpened(t, g, cs.ID())
		if worker == "" {
			worker = w
		}
		if p != pid || w != worker {
			t.Errorf("session %d opened on worker %s pid %d, want %s pid %d", s, w, p, worker, pid)
		}
		if s%10 == 0 {
			who := puWhoami(t, cs)
			if who.User != "alice" || who.Worker != worker || who.ReadOnly {
				t.Errorf("session %d: whoami says %+v, want alice on worker %s, read-write", s, who, worker)
			}
		}
	}
	if n := len(g.logEvents("session opened")); n != puSessions {
		t.Errorf("%d \"session opened\" log lines, want %d", n, puSessions)
	}

	// The sessions end; the worker outlives them (it ends only after worker_idle_timeout).
	for _, cs := range sessions {
		if cs != nil {
			if err := cs.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	}
	g.waitLog("session ended", 10*time.Second)
	if !alive(pid) {
		t.Errorf("the per-user worker %d ended with its last session; it should wait for worker_idle_timeout", pid)
	}
}
