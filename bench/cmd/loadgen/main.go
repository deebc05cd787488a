package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
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

// firstError keeps the first error of several goroutines.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func runCalls(c config) (map[string]any, error) {
	ctx := context.Background()
	fill := strings.Repeat("x", c.payload)
	sessions, err := c.openWarm(ctx, fill)
	defer endAll(ctx, sessions)
	if err != nil {
		return nil, err
	}
	runtime.GC()
	before := c.snapshot()
	lat, elapsed, err := c.callAll(ctx, sessions, fill)
	workersCPU := treeCPUSince(c.workerParent(), before.workers)
	after := c.snapshot()
	if err != nil {
		return nil, err
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
		"machine_busy_cpu_s": after.busy - before.busy, "machine_cpus": after.cpus,
		"loadgen_measured_cpu_s": after.self - before.self,
	}
	if c.pid > 0 {
		res["gateway_cpu_s"] = after.gateway - before.gateway
		res["gateway_cpu_us_per_call"] = (after.gateway - before.gateway) * 1e6 / float64(n)
		res["gateway_peak_rss_kib"], _ = statusKiB(c.pid, "VmHWM")
		res["gateway_rss_kib"], _ = statusKiB(c.pid, "VmRSS")
	}
	return res, nil
}

// openWarm opens every session and warms each up before the clock starts; the sessions it
// returns are to be ended even when it fails.
func (c config) openWarm(ctx context.Context, fill string) ([]session, error) {
	sessions := make([]session, c.sessions)
	var first firstError
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			s, _, err := c.openSession(ctx)
			if err != nil {
				first.set(err)
				return
			}
			sessions[i] = s
			for n := range c.warmup {
				if err := s.echo(ctx, echoText(fill, i, -1-n)); err != nil {
					first.set(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return sessions, first.get()
}

func endAll(ctx context.Context, sessions []session) {
	var wg sync.WaitGroup
	for _, s := range sessions {
		if s != nil {
			wg.Go(func() { s.end(ctx) })
		}
	}
	wg.Wait()
}

// callAll makes c.calls echo calls on every session at once and returns each call's latency
// per session and the time all of them took.
func (c config) callAll(ctx context.Context, sessions []session, fill string) ([][]time.Duration, time.Duration, error) {
	lat := make([][]time.Duration, len(sessions))
	var first firstError
	var wg sync.WaitGroup
	start := time.Now()
	for i, s := range sessions {
		wg.Go(func() {
			d := make([]time.Duration, 0, c.calls)
			for n := range c.calls {
				t := time.Now()
				if err := s.echo(ctx, echoText(fill, i, n)); err != nil {
					first.set(err)
					return
				}
				d = append(d, time.Since(t))
			}
			lat[i] = d
		})
	}
	wg.Wait()
	return lat, time.Since(start), first.get()
}

// cpuSnapshot is what a measured phase is judged by, taken at its start and its end.
type cpuSnapshot struct {
	gateway, busy, self float64
	cpus                int
	workers             map[int]float64
}

func (c config) snapshot() cpuSnapshot {
	var s cpuSnapshot
	s.gateway = c.cpu()
	s.workers = treeCPU(c.workerParent())
	s.busy, s.cpus, _ = busyCPUSeconds()
	s.self, _ = cpuSeconds(os.Getpid())
	return s
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
	before, err := c.usage()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	sessions, err := c.openIdle(ctx)
	opened, open := time.Since(start), len(sessions)
	time.Sleep(c.settle)
	after, _ := c.usage()
	hwm, _ := statusKiB(c.pid, "VmHWM")
	runtime.KeepAlive(sessions) // open until measured
	res := map[string]any{
		"sessions": c.sessions, "open_sessions": open, "open_s": opened.Seconds(),
		"gateway_rss_before_kib": before.rss, "gateway_rss_after_kib": after.rss, "gateway_peak_rss_kib": hwm,
		"gateway_fds_before": before.fds, "gateway_fds_after": after.fds,
		"gateway_threads_before": before.threads, "gateway_threads_after": after.threads,
	}
	if open > 0 {
		res["per_session_kib"] = float64(after.rss-before.rss) / float64(open)
		// The gateway's descriptors: the GET stream's socket and, with a worker per
		// session, the gateway's ends of that worker's pipes and its pidfd. The worker's
		// own ends are the worker process's and are not counted here.
		res["fds_per_session"] = float64(after.fds-before.fds) / float64(open)
		// OS threads: with a worker per session, a thread blocked waiting for each worker's
		// exit would show here.
		res["threads_per_session"] = float64(after.threads-before.threads) / float64(open)
	}
	if err != nil {
		res["error"] = err.Error()
	}
	return res, nil
}

// gatewayUsage is the gateway process's resident memory (KiB), open descriptors and OS
// threads.
type gatewayUsage struct {
	rss, threads int64
	fds          int
}

func (c config) usage() (gatewayUsage, error) {
	var u gatewayUsage
	var err1, err2, err3 error
	u.rss, err1 = statusKiB(c.pid, "VmRSS")
	u.fds, err2 = openFDs(c.pid)
	u.threads, err3 = statusKiB(c.pid, "Threads") // a count, read as the KiB figures are
	return u, errors.Join(err1, err2, err3)
}

// openIdle opens c.sessions sessions, c.parallel at a time, each holding one connection: its
// GET stream. It stops at the first error and returns the sessions open, which stay open as
// long as the slice is reachable.
func (c config) openIdle(ctx context.Context) ([]*httpSession, error) {
	sessions := make([]*httpSession, c.sessions)
	var first firstError
	sem := make(chan struct{}, c.parallel)
	var wg sync.WaitGroup
	for i := range c.sessions {
		if first.get() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s := newHTTPSession(c.url, c.token)
			_, err := s.open(ctx)
			if err == nil {
				err = s.openStream(ctx)
			}
			s.tr.CloseIdleConnections()
			if err != nil {
				first.set(fmt.Errorf("session %d: %w", i, err))
				return
			}
			sessions[i] = s
		})
	}
	wg.Wait()
	return slices.DeleteFunc(sessions, func(s *httpSession) bool { return s == nil }), first.get()
}
