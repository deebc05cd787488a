package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

type config struct {
	mode, label, url, token, worker  string
	era                              string
	sessions, calls, warmup, payload int
	opens, parallel                  int
	pid                              int
	settle, deadline                 time.Duration
	shared                           *sharedWorker // -shared: every session's calls go to one worker
}

func main() {
	var c config
	flag.StringVar(&c.mode, "mode", "calls", "calls, open or idle")
	flag.StringVar(&c.label, "label", "", "scenario name, copied into the result")
	flag.StringVar(&c.url, "url", "", "MCP endpoint (Streamable HTTP)")
	flag.StringVar(&c.token, "token", "", "bearer token for the endpoint")
	flag.StringVar(&c.era, "era", "legacy", "legacy (initialize, a session per client) or sessionless (2026-07-28 requests, no session; calls mode only)")
	flag.StringVar(&c.worker, "stdio", "", "worker command line: talk to the worker directly over stdio instead of -url")
	shared := flag.Bool("shared", false, "with -stdio: one worker process for all sessions, their calls in flight at once over its pipes")
	flag.IntVar(&c.sessions, "sessions", 1, "concurrent sessions (calls) or K sessions to hold open (idle)")
	flag.IntVar(&c.calls, "calls", 1000, "measured tools/call requests per session")
	flag.IntVar(&c.warmup, "warmup", 50, "warm-up requests per session, not measured")
	flag.IntVar(&c.payload, "payload", 100, "echo payload in bytes")
	flag.IntVar(&c.opens, "opens", 30, "sessions to open one after another (open)")
	flag.IntVar(&c.parallel, "parallel", 16, "sessions being opened at once (idle)")
	flag.IntVar(&c.pid, "pid", 0, "gateway process to measure (CPU, RSS)")
	flag.DurationVar(&c.settle, "settle", 3*time.Second, "wait before reading RSS (idle)")
	flag.DurationVar(&c.deadline, "deadline", 20*time.Minute, "fail the run if it has not ended by then (a call or open that never ends)")
	flag.Parse()
	// A lost answer would leave its call waiting for good, and the benchmark with it. No call
	// here has a deadline of its own (a timer per call would be load of loadgen's own), so the
	// whole run has one: it fails with an error instead of hanging. The worker processes
	// loadgen started die with it (Pdeathsig).
	time.AfterFunc(c.deadline, func() {
		fail(fmt.Errorf("%s mode not done after %s: a call or session open never ended", c.mode, c.deadline))
	})
	if (c.url == "") == (c.worker == "") {
		fail(errors.New("give exactly one of -url and -stdio"))
	}
	if c.era != "legacy" && c.era != "sessionless" {
		fail(fmt.Errorf("-era %q: give legacy or sessionless", c.era))
	}
	if *shared {
		if c.worker == "" || c.mode != "calls" {
			fail(errSharedNeedsStdio)
		}
		c.shared = &sharedWorker{argv: strings.Fields(c.worker)}
	}
	var res map[string]any
	var err error
	switch c.mode {
	case "calls":
		res, err = runCalls(c)
	case "open":
		res, err = runOpen(c)
	case "idle":
		res, err = runIdle(c)
	default:
		err = fmt.Errorf("unknown mode %q", c.mode)
	}
	if err != nil {
		fail(err)
	}
	res["label"], res["mode"], res["era"] = c.label, c.mode, c.era
	self, _ := cpuSeconds(os.Getpid())
	res["loadgen_cpu_s"] = self
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fail(err)
	}
}

// echoText is the text of session's call number n (warm-up calls negative): fill, of the
// payload's length, with the session and call written over its start, so that checkEcho, which
// compares the whole text, would see an answer that reached the wrong call. A payload shorter
// than its tag is sent as fill alone.
func echoText(fill string, session, n int) string {
	tag := "s" + strconv.Itoa(session) + "c" + strconv.Itoa(n) + " "
	if len(tag) > len(fill) {
		return fill
	}
	return tag + fill[len(tag):]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "loadgen:", err)
	os.Exit(1)
}

// session is what the calls mode needs of a session, over HTTP or stdio.
type session interface {
	echo(ctx context.Context, text string) error
	end(ctx context.Context)
}

type stdioAdapter struct{ *stdioSession }

func (s stdioAdapter) echo(_ context.Context, text string) error { return s.stdioSession.echo(text) }
func (s stdioAdapter) end(context.Context)                       { s.close() }

func (c config) openSession(ctx context.Context) (session, time.Duration, error) {
	if c.shared != nil {
		s, err := c.shared.session()
		return s, 0, err
	}
	if c.worker != "" {
		s, took, err := openStdio(strings.Fields(c.worker))
		if err != nil {
			return nil, 0, err
		}
		return stdioAdapter{s}, took, nil
	}
	s := newHTTPSession(c.url, c.token)
	s.sessionless = c.era == "sessionless"
	took, err := s.open(ctx)
	if err != nil {
		s.end(ctx)
		return nil, 0, err
	}
	return s, took, nil
}

func runCalls(c config) (map[string]any, error) {
	ctx := context.Background()
	fill := strings.Repeat("x", c.payload)
	sessions := make([]session, c.sessions)
	var mu sync.Mutex
	var firstErr error
	setErr := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	// Open and warm up every session before the clock starts.
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, _, err := c.openSession(ctx)
			if err != nil {
				setErr(err)
				return
			}
			sessions[i] = s
			for n := range c.warmup {
				if err := s.echo(ctx, echoText(fill, i, -1-n)); err != nil {
					setErr(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	defer func() {
		var wg sync.WaitGroup
		for _, s := range sessions {
			if s != nil {
				wg.Add(1)
				go func() { defer wg.Done(); s.end(ctx) }()
			}
		}
		wg.Wait()
	}()
	if firstErr != nil {
		return nil, firstErr
	}
	runtime.GC()

	cpu0 := c.cpu()
	workers0 := treeCPU(c.workerParent())
	busy0, _, _ := busyCPUSeconds()
	self0, _ := cpuSeconds(os.Getpid())
	lat := make([][]time.Duration, c.sessions)
	start := time.Now()
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := make([]time.Duration, 0, c.calls)
			for n := range c.calls {
				text := echoText(fill, i, n)
				t := time.Now()
				if err := s.echo(ctx, text); err != nil {
					setErr(err)
					return
				}
				d = append(d, time.Since(t))
			}
			lat[i] = d
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1 := c.cpu()
	workersCPU := treeCPUSince(c.workerParent(), workers0)
	busy1, cpus, _ := busyCPUSeconds()
	self1, _ := cpuSeconds(os.Getpid())
	if firstErr != nil {
		return nil, firstErr
	}
	var all []time.Duration
	for _, d := range lat {
		all = append(all, d...)
	}
	n := len(all)
	res := map[string]any{
		"sessions": c.sessions, "calls": c.calls, "warmup": c.warmup, "payload": c.payload,
		"total_calls": n, "elapsed_s": elapsed.Seconds(),
		"throughput": float64(n) / elapsed.Seconds(),
		"latency_us": summarise(all),
		// The workers' CPU (every process under the gateway, or under loadgen with -stdio)
		// and the machine's, over the measured phase: the share of the machine the
		// gateway's own CPU per call leaves to the rest.
		"workers_cpu_s": workersCPU, "workers_cpu_us_per_call": workersCPU * 1e6 / float64(n),
		"machine_busy_cpu_s": busy1 - busy0, "machine_cpus": cpus,
		"loadgen_measured_cpu_s": self1 - self0,
	}
	if c.pid > 0 {
		res["gateway_cpu_s"] = cpu1 - cpu0
		res["gateway_cpu_us_per_call"] = (cpu1 - cpu0) * 1e6 / float64(n)
		res["gateway_peak_rss_kib"], _ = statusKiB(c.pid, "VmHWM")
		res["gateway_rss_kib"], _ = statusKiB(c.pid, "VmRSS")
	}
	return res, nil
}

// workerParent is the process whose descendants are the workers: the gateway, or loadgen
// itself when it runs the workers (-stdio).
func (c config) workerParent() int {
	if c.pid > 0 {
		return c.pid
	}
	return os.Getpid()
}

func (c config) cpu() float64 {
	if c.pid <= 0 {
		return 0
	}
	v, _ := cpuSeconds(c.pid)
	return v
}

func runOpen(c config) (map[string]any, error) {
	ctx := context.Background()
	// Three opens first, so that caches (binary pages, TLS of nothing, pools) are warm.
	var took []time.Duration
	for i := range c.opens + 3 {
		s, d, err := c.openSession(ctx)
		if err != nil {
			return nil, err
		}
		if i >= 3 {
			took = append(took, d)
		}
		s.end(ctx)
	}
	return map[string]any{"opens": c.opens, "open_latency_us": summarise(took)}, nil
}

func runIdle(c config) (map[string]any, error) {
	if c.url == "" || c.pid <= 0 {
		return nil, errors.New("idle needs -url and -pid")
	}
	ctx := context.Background()
	// One session opened and ended first, so lazily built state is not counted per session.
	warm := newHTTPSession(c.url, c.token)
	if _, err := warm.open(ctx); err != nil {
		return nil, err
	}
	if err := warm.openStream(ctx); err != nil {
		return nil, err
	}
	warm.end(ctx)
	runtime.GC()
	time.Sleep(c.settle)
	before, err := statusKiB(c.pid, "VmRSS")
	if err != nil {
		return nil, err
	}
	fdsBefore, err := openFDs(c.pid)
	if err != nil {
		return nil, err
	}
	threadsBefore, err := statusKiB(c.pid, "Threads") // a count, read as the KiB figures are
	if err != nil {
		return nil, err
	}
	sessions := make([]*httpSession, c.sessions)
	sem := make(chan struct{}, c.parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for i := range sessions {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			s := newHTTPSession(c.url, c.token)
			_, err := s.open(ctx)
			if err == nil {
				err = s.openStream(ctx)
			}
			// The session keeps one connection: its GET stream.
			s.tr.CloseIdleConnections()
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("session %d: %w", i, err)
				}
				mu.Unlock()
				return
			}
			sessions[i] = s
		}()
		mu.Lock()
		stop := firstErr != nil
		mu.Unlock()
		if stop {
			break
		}
	}
	wg.Wait()
	opened := time.Since(start)
	open := 0
	for _, s := range sessions {
		if s != nil {
			open++
		}
	}
	time.Sleep(c.settle)
	after, _ := statusKiB(c.pid, "VmRSS")
	hwm, _ := statusKiB(c.pid, "VmHWM")
	fdsAfter, _ := openFDs(c.pid)
	threadsAfter, _ := statusKiB(c.pid, "Threads")
	res := map[string]any{
		"sessions": c.sessions, "open_sessions": open, "open_s": opened.Seconds(),
		"gateway_rss_before_kib": before, "gateway_rss_after_kib": after, "gateway_peak_rss_kib": hwm,
		"gateway_fds_before": fdsBefore, "gateway_fds_after": fdsAfter,
		"gateway_threads_before": threadsBefore, "gateway_threads_after": threadsAfter,
	}
	if open > 0 {
		res["per_session_kib"] = float64(after-before) / float64(open)
		// The gateway's descriptors: the GET stream's socket and, with a worker per
		// session, the gateway's ends of that worker's pipes and its pidfd. The worker's
		// own ends are the worker process's and are not counted here.
		res["fds_per_session"] = float64(fdsAfter-fdsBefore) / float64(open)
		// OS threads: with a worker per session, a thread blocked waiting for each worker's
		// exit would show here.
		res["threads_per_session"] = float64(threadsAfter-threadsBefore) / float64(open)
	}
	if firstErr != nil {
		res["error"] = firstErr.Error()
	}
	return res, nil
}
