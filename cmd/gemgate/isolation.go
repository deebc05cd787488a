package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gemgate/gemgate/worker"
)

// hardenGateway is the process-wide part of worker isolation, done before anything else.
// gemgate becomes non-dumpable, so no process of its uid can read its environment (the
// exchange client secret) or memory through /proc or ptrace. It becomes a child subreaper,
// so descendants that escape a worker come back to it to be killed. Descriptors inherited
// beyond stdin, stdout and stderr are closed on exec, so no worker gets them.
func hardenGateway() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("making gemgate non-dumpable: %w", err)
	}
	if err := worker.BecomeSubreaper(); err != nil {
		return fmt.Errorf("making gemgate a child subreaper: %w", err)
	}
	worker.CloseInheritedOnExec()
	return nil
}

// ErrRootWorkers refuses to run workers as root with nothing between them and the host.
var ErrRootWorkers = errors.New("gemgate runs as root without a worker sandbox and without worker_user: " +
	"every worker would run as root with all capabilities and could read gemgate's memory, every other worker's credential and the whole host; " +
	"set worker_user (for example nobody), or make bubblewrap work (worker_sandbox: bwrap)")

func runningAsRoot() bool { return os.Geteuid() == 0 }

// validateIsolation checks the worker isolation settings without touching bubblewrap.
func (c *Config) validateIsolation(p *problemList) {
	if c.WorkerSandbox == "none" && c.rootWorkers() {
		p.add("worker_sandbox: %w", ErrRootWorkers)
	}
	for _, list := range []struct {
		key   string
		paths []string
	}{{"worker_sandbox_writable", c.WorkerSandboxWritable}, {"worker_sandbox_readable", c.WorkerSandboxReadable}} {
		for _, path := range list.paths {
			p.addIf(!filepath.IsAbs(path) || filepath.Clean(path) == "/", "%s: %q must be an absolute path other than /", list.key, path)
		}
	}
	if c.WorkerUser != "" {
		if !runningAsRoot() {
			p.add("worker_user: running workers as another account needs gemgate to run as root (it runs as uid %d)", os.Geteuid())
		} else if !strings.Contains(c.WorkerUser, "{user}") {
			if _, err := worker.LookupAccount(c.WorkerUser); err != nil {
				p.add("worker_user: %v", err)
			}
		}
	}
	p.addIf(c.WorkerWriteTimeout <= 0, "worker_write_timeout: must be positive (a write to a worker that does not read must end)")
}

// rootWorkers tells whether workers would run as root with nothing but a sandbox between
// them and the host: gemgate runs as root, no worker_user, and not gemgate dev's nobody.
func (c *Config) rootWorkers() bool {
	return runningAsRoot() && c.WorkerUser == "" && !c.devWorkersAsNobody()
}

// probeAccount is the account the sandbox probe runs as: the workers' own when it is one fixed
// account; for per-user accounts a stand-in unprivileged one, since bwrap then needs user
// namespaces, as it will for each user's account.
func (c *Config) probeAccount() *worker.Account {
	name := c.WorkerUser
	if name == "" {
		return nil
	}
	if strings.Contains(name, "{user}") {
		name = "nobody"
	}
	a, _ := worker.LookupAccount(name)
	return a
}

// ErrNoSandbox refuses to serve with workers that nothing isolates from each other, unless
// the operator said so.
var ErrNoSandbox = errors.New("no worker sandbox works on this host, and gemgate serve does not run workers unsandboxed unless told to: " +
	"unsandboxed, a worker can read the memory of every process of its uid (another user's worker and its credential, through /proc/<pid>/mem), " +
	"send signals to other users' workers and to gemgate, and see every process on the host; " +
	"fix: install bubblewrap (apt-get install bubblewrap) and allow it user namespaces (in a container: a seccomp profile that permits them, see docs/operations.md), " +
	"or set worker_sandbox: none to accept the risk")

// workerIsolation decides the sandbox: auto and bwrap probe bubblewrap once, here, at start.
// Without a working one, auto refuses to serve; gemgate dev (loopback, one person) runs its
// workers unsandboxed and says so. It returns the bubblewrap in use ("" when workers run
// unconfined) and one line on the isolation in force, for the log and `gemgate check`.
func (c *Config) workerIsolation(ctx context.Context) (bwrap, describe string, err error) {
	if c.WorkerSandbox == "none" {
		if c.sandboxByWorker {
			return "", "worker sandbox: none (the default for worker=gemstone: " + gemstoneSandboxReason +
				"; worker_sandbox: auto tries it)", nil
		}
		return "", "worker sandbox: none (worker_sandbox=none)", nil
	}
	bwrap, err = worker.ProbeSandbox(ctx, c.probeAccount())
	switch {
	case err == nil:
		return bwrap, "worker sandbox: bwrap (" + bwrap + "): own PID namespace and /proc, host filesystem read-only, " +
			"gemgate's own secrets hidden, private /tmp, no capabilities, dies with gemgate", nil
	case c.WorkerSandbox == "bwrap":
		return "", "", fmt.Errorf("worker_sandbox: %w", err)
	case !c.dev:
		return "", "", fmt.Errorf("worker_sandbox: auto: %v; %w", err, ErrNoSandbox)
	case c.rootWorkers():
		return "", "", fmt.Errorf("worker_sandbox: auto found no working sandbox (%v), and %w", err, ErrRootWorkers)
	}
	return "", "worker sandbox: none (auto: " + err.Error() + ")", nil
}

// isolate applies the worker isolation settings to the launcher and says, once, at start, what
// is in force and what is not isolated.
func (s *server) isolate(ctx context.Context, l *worker.CommandLauncher) error {
	c := s.cfg
	bwrap, describe, err := c.workerIsolation(ctx)
	if err != nil {
		return err
	}
	if bwrap == "" && c.devWorkersAsNobody() {
		if err := s.runDevWorkersAsNobody(l); err != nil {
			return err
		}
	}
	if bwrap == "" && c.WorkerUser != "" && c.Worker == "demo" {
		// The demo worker is gemgate's own binary, which may sit where the workers' account
		// cannot reach it (go run builds it in a folder only its user may enter). The
		// kernel's link to the running binary needs no such search permission.
		l.Command[0] = "/proc/self/exe"
	}
	l.WriteTimeout = c.WorkerWriteTimeout
	l.WorkerUser = c.WorkerUser
	l.CredentialEnv = l.CredentialEnv || c.WorkerCredentialEnv
	if bwrap != "" {
		// The launcher may already name what its worker kind needs to see (GemStone's product).
		if l.Sandbox == nil {
			l.Sandbox = &worker.Sandbox{}
		}
		l.Sandbox.Bwrap = bwrap
		l.Sandbox.Readable = append(l.Sandbox.Readable, c.WorkerSandboxReadable...)
		l.Sandbox.Writable = append(l.Sandbox.Writable, c.WorkerSandboxWritable...)
		l.Sandbox.Hidden = c.gatewaySecrets(l.DataDir)
		s.log.Info(describe, "worker_user", c.WorkerUser)
		s.sandbox = "bwrap"
	} else {
		l.Sandbox = nil
		// At every start: the operator chose this (worker_sandbox: none), or gemgate dev runs
		// without a sandbox it could not find.
		s.log.Warn(describe+"; workers are NOT isolated", "not_isolated", worker.Unisolated(c.WorkerUser != ""))
		s.sandbox = "none"
	}
	if runningAsRoot() && c.WorkerUser == "" {
		s.log.Warn("gemgate runs as root and worker_user is not set: workers run as uid 0 inside the sandbox (no capabilities), " +
			"so they can read every root-owned file on the host, gemgate's config, keys and service ini included; set worker_user")
	}
	if l.CredentialEnv && !l.CredentialStdin && l.Credential != nil {
		s.log.Warn("worker credentials travel in GEMGATE_CREDENTIAL: any process of the worker's uid that can read its /proc/<pid>/environ reads them; without worker_credential_env they are handed on a descriptor")
	}
	return nil
}

// isolation is the worker isolation part of `gemgate check`: which sandbox would be in force,
// and whether workers would run as root. Workers without a sandbox, or as root, are warnings:
// allowed, but not what the defaults give.
func (r *checkReport) isolation(ctx context.Context, c *Config) {
	bwrap, describe, err := c.workerIsolation(ctx)
	switch {
	case err != nil:
		r.bad(err.Error(), "install bubblewrap and allow it user namespaces (docs/operations.md), or set worker_sandbox: none to accept the risk (as root, with worker_user)")
		return
	case bwrap != "":
		r.ok(describe)
	default:
		r.warn(describe+"; NOT isolated: "+worker.Unisolated(c.WorkerUser != ""),
			"install bubblewrap and set worker_sandbox: auto (or bwrap)")
	}
	if runningAsRoot() && c.WorkerUser == "" {
		r.warn("workers run as uid 0 (in the sandbox, without capabilities)", "set worker_user")
	}
}

// gatewaySecrets are the files of gemgate's that its workers must not read, though they see
// the host read-only and may run as gemgate's own uid: the TLS key, the development CA's key
// (dev --tls), the config files (which may hold exchange_client_secret), and the development
// issuer's key and state in dataDir.
func (c *Config) gatewaySecrets(dataDir string) []string {
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		if abs, err := filepath.Abs(p); err == nil {
			out = append(out, abs)
		}
	}
	add(c.TLSKey)
	// The development CA's key and its certificate's, where dev --tls keeps them, whether or
	// not this run uses them: the CA's is what the user's clients were told to trust.
	dev := devCertPaths(devCertsDir)
	add(dev.CAKey)
	add(dev.Key)
	for _, f := range c.configFiles {
		add(f)
	}
	if dataDir != "" {
		add(filepath.Join(dataDir, devStateDir))
	}
	return out
}
