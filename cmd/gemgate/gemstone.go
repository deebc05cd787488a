package main

import (
	"cmp"
	"context"
	"fmt"

	"github.com/gemgate/gemgate/pool"
	"github.com/gemgate/gemgate/worker"
	"github.com/gemgate/gemgate/worker/gemstone"
)

// byWorker fills in the settings left unset whose default depends on the worker kind (root:
// whether gemgate runs as root). For GemStone: worker_credential exchange (the relay logs in
// with a token minted for GemStone); worker_per session and on_worker_exit end, since a
// session's state lives in its gem (why: gemstoneWarnings, validateGemStone); worker_sandbox
// none for an ordinary account (gemstoneSandboxReason), but auto as root, since unsandboxed
// the relay would run as uid 0 with every capability.
func (c *Config) byWorker(root bool) {
	gs := c.Worker == "gemstone"
	either := func(gemstone, other string) string {
		if gs {
			return gemstone
		}
		return other
	}
	c.WorkerCredential = cmp.Or(c.WorkerCredential, either("exchange", "none"))
	c.WorkerPer = cmp.Or(c.WorkerPer, either(pool.PerSession, pool.PerUser))
	c.OnWorkerExit = cmp.Or(c.OnWorkerExit, either(pool.ExitEnd, pool.ExitKeep))
	if c.WorkerSandbox == "" {
		c.sandboxByWorker = gs && !root
		c.WorkerSandbox = "auto"
		if c.sandboxByWorker {
			c.WorkerSandbox = "none"
		}
	}
}

// gemstoneSandboxReason is why the GemStone relay runs without bubblewrap by default, for the
// start log and `gemgate check`.
const gemstoneSandboxReason = "the GemStone relay is a linked gem: it attaches to the stone's shared page cache as gemgate's account, " +
	"and GemStone identifies sessions by host pid; that a linked gem works in bubblewrap's PID namespace is not yet measured on a real stone. " +
	"The relay runs only gemgate's relay script; the user's code runs in the user's gem, which the NetLDI forks outside gemgate"

// gemstoneSessionsOnly is why the GemStone worker serves no sessionless (2026-07-28) request.
const gemstoneSessionsOnly = "the GemStone worker serves sessions only: a GemStone session is a transaction view that lives between calls, " +
	"and a request without a session has none to own it, nor to end when its gem is lost"

func (c *Config) gemstoneConfig() gemstone.Config {
	return gemstone.Config{Home: c.GemStoneHome, GlobalDir: c.GemStoneGlobalDir, Stone: c.GemStoneStone, ServiceINI: c.GemStoneINI, ScriptDir: c.GemStoneScriptDir, GemConfig: c.GemStoneGemConfig}
}

// validateGemStone checks the settings of worker=gemstone without touching the stone.
func (c *Config) validateGemStone(p *problemList) {
	p.addIf(c.gemstoneConfig().HomeOrEnv() == "", "gemstone_home: required with worker=gemstone (or set GEMSTONE)")
	p.addIf(c.GemStoneINI == "", "gemstone_service_ini: required with worker=gemstone (the 0600 topaz ini of the service account)")
	if err := gemstone.ValidGemConfig(c.GemStoneGemConfig); err != nil {
		p.add("gemstone_gem_config: %w", err)
	}
	p.addIf(c.WorkerCredential != "exchange" && c.WorkerCredential != "passthrough",
		"worker_credential: worker=gemstone logs each user in with a token, so it needs exchange (recommended) or passthrough, not %s", c.WorkerCredential)
	p.addIf(c.OnWorkerExit == pool.ExitKeep, "on_worker_exit: keep is refused with worker=gemstone: a GemStone session's state (uncommitted work, locks, session temporaries) "+
		"lives in the user's gem, which dies with its relay, so a kept session would be handed a fresh login with its work silently gone; "+
		"use end (the default for this worker): the client gets 404 and starts a new session")
}

// gemstoneCommand points l at the topaz relay: checks the product and the service ini,
// resolves GEMSTONE_GLOBAL_DIR with gslist and installs the relay script.
func (s *server) gemstoneCommand(ctx context.Context, l *worker.CommandLauncher) error {
	r, err := gemstone.Prepare(ctx, s.cfg.gemstoneConfig())
	if err != nil {
		return fmt.Errorf("gemstone: %w", err)
	}
	if r.GlobalDir.Found {
		s.log.Info("gemstone worker ready", "stone", r.Stone, "global_dir", r.GlobalDir.Dir, "netldi", r.NetLDI, "note", r.GlobalDir.Note)
		if r.NetLDI == "" {
			s.log.Warn("gemstone: no running netldi of the stone's owner; user logins will fail until one runs (startnetldi -g -a <owner>)",
				"global_dir", r.GlobalDir.Dir, "passed_over", gemstone.OtherNetLDIs(r.GlobalDir.Servers, r.Stone))
		}
	} else {
		s.log.Warn("gemstone: the stone is not running yet; sessions will fail until it is", "stone", r.Stone, "global_dir", r.GlobalDir.Dir, "note", r.GlobalDir.Note)
	}
	s.relay = r
	l.Command = r.Command()
	// The NetLDI the user's gem is forked through is not in Env: each session's start asks
	// gslist for it (gemstoneLauncher).
	l.Env = append(l.Env, r.Env()...)
	// The relay reads stdin already, so it reads the credential as the first line there:
	// never in an environment another process of the account may read. The relay reads
	// GemStone's product, its global directory (locks, logs) and the service ini, wherever
	// they are.
	l.CredentialStdin = true
	l.Sandbox = &worker.Sandbox{Readable: []string{r.Home}}
	if r.GlobalDir.Dir != "" {
		l.Sandbox.Writable = []string{r.GlobalDir.Dir}
	}
	return nil
}

// gemstoneLauncher starts the relay as the command launcher does, and reads its answers the
// GemStone way: a refusal becomes the client's initialize error, and a corrupted answer
// (#51438) fails its call. Each start first finds with gslist the stone owner's running
// NetLDI and starts no relay without one: with no GEMSTONE_NRS_ALL, GemStone would fork the
// user's gem through whatever NetLDI is named gs64ldi, whoever runs it.
type gemstoneLauncher struct {
	*worker.CommandLauncher
	relay *gemstone.Relay
}

func (l gemstoneLauncher) Launch(ctx context.Context, id worker.Identity) (worker.Launch, error) {
	nrs, err := l.relay.SessionNRS(ctx)
	if err != nil {
		return worker.Launch{}, err
	}
	la, err := l.CommandLauncher.Launch(ctx, id)
	if err != nil {
		return la, err
	}
	if nrs != "" {
		la.Spec.Env = append(la.Spec.Env, nrs) // the last of a name is the one the relay sees
	}
	gemstone.Apply(&la.Spec)
	return la, nil
}

// gemstone adds the GemStone environment to `gemgate check`.
func (r *checkReport) gemstone(ctx context.Context, c *Config) {
	for _, f := range gemstone.Check(ctx, c.gemstoneConfig()) {
		if f.OK {
			r.ok("gemstone: " + f.What)
		} else {
			r.bad("gemstone: "+f.What, f.Fix)
		}
	}
}

// gemstoneWarnings are the GemStone settings that work but cost what the operator may not
// mean (root: whether gemgate runs as root), for the start log and `gemgate check`.
func (c *Config) gemstoneWarnings(root bool) []warning {
	if c.Worker != "gemstone" {
		return nil
	}
	var out []warning
	if c.WorkerPer == pool.PerUser {
		out = append(out, warning{
			what: "worker_per: user with worker=gemstone: all of a user's clients (per access mode) share one GemStone session, " +
				"one transaction view, one set of uncommitted changes and locks: one client's abort or commit acts on another's half-done work, " +
				"one client's long call holds up the others, and the native server's \"nobody else can see any of it until you commit\" is false",
			fix: "leave worker_per unset (session, the default for this worker: each client its own GemStone session), unless one shared session per user is what you want",
		})
	}
	if root {
		out = append(out, warning{
			what: "gemgate runs as root with worker=gemstone: the relay, a linked gem, would run as root (in the sandbox, without capabilities), " +
				"or as worker_user, which cannot read its 0600 service ini and relay script",
			fix: "run gemgate as an ordinary account, the one given linked-session access to the stone (docs/gemstone.md, \"The host a linked gem needs\")",
		})
	}
	return out
}
