package main

import (
	"context"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/pool"
)

// TestGemStoneSessionDefaults pins the defaults that depend on the worker kind: a GemStone
// worker per client session whose death ends its sessions; every other worker per user,
// its sessions kept; and what the operator sets wins.
func TestGemStoneSessionDefaults(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		per, onExit   string
		sessionsOnly  bool
		credentialFor string
	}{
		{[]string{"--worker", "gemstone"}, "session", "end", true, "exchange"},
		{[]string{"--worker", "gemstone", "--worker-per", "user"}, "user", "end", true, "exchange"},
		{[]string{"--worker", "demo"}, "user", "keep", false, "none"},
		{[]string{"--worker", "demo", "--worker-per", "session"}, "session", "keep", false, "none"},
		{nil, "user", "keep", false, "none"},
	} {
		c, err := load("serve", tc.args)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if c.WorkerPer != tc.per || c.OnWorkerExit != tc.onExit || c.WorkerCredential != tc.credentialFor {
			t.Errorf("%v: worker_per %q, on_worker_exit %q, worker_credential %q; want %q, %q, %q",
				tc.args, c.WorkerPer, c.OnWorkerExit, c.WorkerCredential, tc.per, tc.onExit, tc.credentialFor)
		}
		if got := c.poolSettings().SessionsOnly != ""; got != tc.sessionsOnly {
			t.Errorf("%v: sessions only %v, want %v", tc.args, got, tc.sessionsOnly)
		}
	}
}

// TestGemStoneRefusesKeepingSessionsOfADeadGem: on_worker_exit: keep would hand a GemStone
// session a fresh login after its gem died, its uncommitted work silently gone.
func TestGemStoneRefusesKeepingSessionsOfADeadGem(t *testing.T) {
	refused := func(args ...string) bool {
		c, err := load("serve", args)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range c.validate() {
			if strings.Contains(e.Error(), "on_worker_exit: keep is refused") && strings.Contains(e.Error(), "silently") {
				return true
			}
		}
		return false
	}
	if !refused("--worker", "gemstone", "--worker-per", "user", "--on-worker-exit", "keep") {
		t.Error("worker=gemstone with on_worker_exit: keep was not refused")
	}
	if !refused("--worker", "gemstone", "--on-worker-exit", "keep") {
		t.Error("worker=gemstone (per session) with on_worker_exit: keep was not refused")
	}
	if refused("--worker", "gemstone", "--worker-per", "user") || refused("--worker", "gemstone", "--on-worker-exit", "end") {
		t.Error("worker=gemstone was refused without on_worker_exit: keep")
	}
	c, err := load("serve", []string{"--worker", "demo", "--on-worker-exit", "keep"})
	if err != nil || c.OnWorkerExit != "keep" {
		t.Errorf("the demo worker with keep: %v, %q", err, c.OnWorkerExit)
	}
}

// TestGemStoneSharedSessionIsWarnedAbout: worker_per: user with GemStone is allowed, with its
// consequence in the start log and gemgate check (both read warnings); so is running as root.
func TestGemStoneSharedSessionIsWarnedAbout(t *testing.T) {
	warned := func(c *Config, root bool, want string) bool {
		for _, w := range c.gemstoneWarnings(root) {
			if strings.Contains(w.what, want) {
				return true
			}
		}
		return false
	}
	const shared = "share one GemStone session"
	c := &Config{Worker: "gemstone", WorkerPer: pool.PerUser}
	if !warned(c, false, shared) {
		t.Errorf("worker_per: user with GemStone is not warned about: %v", c.gemstoneWarnings(false))
	}
	if c.WorkerPer = pool.PerSession; warned(c, false, shared) || len(c.gemstoneWarnings(false)) != 0 {
		t.Errorf("per-session GemStone warned: %v", c.gemstoneWarnings(false))
	}
	if !warned(c, true, "runs as root") {
		t.Errorf("GemStone as root is not warned about: %v", c.gemstoneWarnings(true))
	}
	if d := (&Config{Worker: "demo", WorkerPer: pool.PerUser}); len(d.gemstoneWarnings(true)) != 0 {
		t.Errorf("the demo worker got GemStone warnings: %v", d.gemstoneWarnings(true))
	}
	c.WorkerPer = pool.PerUser
	for _, w := range c.warnings() {
		if strings.Contains(w.what, shared) {
			return
		}
	}
	t.Error("the shared GemStone session is not among the warnings the start log and check list")
}

// TestGemStoneRunsUnsandboxedByDefault: the relay is a linked gem, so an ordinary account runs
// it without bubblewrap unless told otherwise, and the log line and check say why. As root the
// sandbox stays (unsandboxed, the relay would be uid 0 with every capability); other workers
// keep auto; an operator's choice wins.
func TestGemStoneRunsUnsandboxedByDefault(t *testing.T) {
	for _, tc := range []struct {
		worker, set string
		root        bool
		want        string
		byWorker    bool
	}{
		{"gemstone", "", false, "none", true},
		{"gemstone", "", true, "auto", false},
		{"gemstone", "auto", false, "auto", false},
		{"gemstone", "bwrap", false, "bwrap", false},
		{"demo", "", false, "auto", false},
		{"command", "", false, "auto", false},
	} {
		c := &Config{Worker: tc.worker, WorkerSandbox: tc.set}
		c.byWorker(tc.root)
		if c.WorkerSandbox != tc.want || c.sandboxByWorker != tc.byWorker {
			t.Errorf("%s, set %q, root %v: worker_sandbox %q (by worker %v), want %q (%v)", tc.worker, tc.set, tc.root, c.WorkerSandbox, c.sandboxByWorker, tc.want, tc.byWorker)
		}
	}
	c := &Config{Worker: "gemstone"}
	c.byWorker(false)
	var out strings.Builder
	r := &checkReport{w: &out}
	r.isolation(context.Background(), c)
	warned := out.String()
	if r.problems > 0 {
		t.Errorf("problem: %s", warned)
	}
	for _, w := range []string{"worker sandbox: none", "linked gem", "PID namespace", "worker_sandbox: auto"} {
		if !strings.Contains(warned, w) {
			t.Errorf("check's isolation line lacks %q: %s", w, warned)
		}
	}
}

// check names a missing gemstone_home once: the configuration's problem, not again as a
// failed live check.
func TestCheckNamesAMissingGemStoneHomeOnce(t *testing.T) {
	t.Setenv("GEMSTONE", "")
	var out, errb strings.Builder
	code := checkCommand(context.Background(), unsandboxed("--worker", "gemstone", "--auth", "none", "--worker-credential", "none",
		"--gemstone-service-ini", "/nonexistent/svc.ini", "--listen", "127.0.0.1:0", "--metrics-listen", "off"), &out, &errb)
	if code != 1 || strings.Count(out.String(), "gemstone_home") != 1 {
		t.Errorf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
}
