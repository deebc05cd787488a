package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// isolationProblems are the problems validate finds in c's worker isolation settings.
func isolationProblems(c *Config) problemList {
	var p problemList
	c.validateIsolation(&p)
	return p
}

func TestValidateIsolation(t *testing.T) {
	root := os.Geteuid() == 0
	for _, tc := range []struct {
		name string
		set  func(c *Config)
		want string // a substring of the only error; "" for none
	}{
		{"defaults", func(c *Config) {}, ""},
		{"unknown sandbox", func(c *Config) { c.WorkerSandbox = "docker" }, `worker_sandbox: "docker" is not auto, bwrap or none`},
		{"relative writable", func(c *Config) { c.WorkerSandboxWritable = []string{"data"} }, "worker_sandbox_writable"},
		{"root writable", func(c *Config) { c.WorkerSandboxWritable = []string{"/"} }, "worker_sandbox_writable"},
		{"relative readable", func(c *Config) { c.WorkerSandboxReadable = []string{"./x"} }, "worker_sandbox_readable"},
		{"no write timeout", func(c *Config) { c.WorkerWriteTimeout = 0 }, "worker_write_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := defaults()
			c.byWorker(runningAsRoot()) // as load resolves it
			tc.set(&c)
			errs := append(c.checkChoices(), isolationProblems(&c)...)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("errors %v, want none", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Fatalf("errors %v, want one naming %q", errs, tc.want)
			}
		})
	}
	t.Run("worker_user", func(t *testing.T) {
		c := defaults()
		c.WorkerUser = "gemgate-no-such-account"
		if errs := isolationProblems(&c); len(errs) != 1 || !strings.Contains(errs[0].Error(), "worker_user") {
			t.Errorf("an unknown worker_user: errors %v", errs)
		}
		c.WorkerUser = "root"
		if errs := isolationProblems(&c); len(errs) != 1 {
			t.Errorf("worker_user root: errors %v, want one", errs)
		}
		c.WorkerUser = "{user}" // resolved per user, at each start
		if errs := isolationProblems(&c); len(errs) != 0 && root {
			t.Errorf("a worker_user template: errors %v", errs)
		}
	})
	t.Run("root without sandbox or account", func(t *testing.T) {
		if !root {
			t.Skip("this refusal concerns gemgate running as root; CI runs as root")
		}
		c := defaults()
		c.WorkerSandbox = "none"
		errs := isolationProblems(&c)
		if len(errs) != 1 || !errors.Is(errs[0], ErrRootWorkers) {
			t.Fatalf("errors %v, want ErrRootWorkers", errs)
		}
		c.WorkerUser = "nobody"
		if errs := isolationProblems(&c); len(errs) != 0 {
			t.Errorf("with worker_user: errors %v", errs)
		}
	})
	// gemgate dev runs such workers as nobody instead (TestDevAsRootWithoutSandboxRunsWorkersAsNobody
	// in test/), except GemStone's relay, whose files an operator set up for a chosen account.
	t.Run("dev as root without sandbox or account", func(t *testing.T) {
		if !root {
			t.Skip("this concerns gemgate running as root; CI runs as root")
		}
		c := defaults()
		c.dev, c.WorkerSandbox = true, "none"
		if errs := isolationProblems(&c); len(errs) != 0 {
			t.Errorf("dev with the demo worker: errors %v, want none (its workers run as nobody)", errs)
		}
		c.Worker = "gemstone"
		if errs := isolationProblems(&c); len(errs) != 1 || !errors.Is(errs[0], ErrRootWorkers) {
			t.Errorf("dev with worker=gemstone: errors %v, want ErrRootWorkers", errs)
		}
	})
}

// `gemgate check` names the worker sandbox in force, and warns (never says OK) when workers
// are not isolated or run as root.
func TestCheckReportsWorkerSandbox(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--worker-sandbox", "none", "--worker-user", "nobody"}, "WARNING  worker sandbox: none (worker_sandbox=none); NOT isolated"},
		{[]string{"--worker-sandbox", "bwrap"}, "OK       worker sandbox: bwrap"},
	} {
		if os.Geteuid() != 0 && tc.flags[1] == "none" {
			tc.flags = tc.flags[:2] // worker_user needs root
		}
		var out, errb bytes.Buffer
		args := append([]string{"--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off"}, tc.flags...)
		checkCommand(context.Background(), args, &out, &errb)
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("check %v:\n%s%s\nwant a line %q", tc.flags, out.String(), errb.String(), tc.want)
		}
		if strings.Contains(out.String(), "OK       WARNING") || strings.Contains(out.String(), "OK       worker sandbox: none") {
			t.Errorf("check %v says OK of a warning:\n%s", tc.flags, out.String())
		}
		rootWarning := "WARNING  workers run as uid 0"
		if got := strings.Contains(out.String(), rootWarning); got != (os.Geteuid() == 0 && !slices.Contains(tc.flags, "--worker-user")) {
			t.Errorf("check %v as uid %d: warns %q: %v\n%s", tc.flags, os.Geteuid(), rootWarning, got, out.String())
		}
	}
}

// What a sandboxed worker must not read of gemgate's: its TLS key, every config file (one may
// hold exchange_client_secret), and the development issuer's state in the data directory;
// with dev --tls also the development CA's key, which signs what the user's clients trust.
func TestGatewaySecretsAreHiddenFromWorkers(t *testing.T) {
	file := writeFile(t, "gemgate.yaml", "issuer: https://id.example/realms/t\n")
	c := mustLoad(t, "--config", file, "--tls-cert", "/etc/gemgate/tls.crt", "--tls-key", "/etc/gemgate/tls.key")
	got := c.gatewaySecrets("/srv/gemgate")
	for _, want := range []string{"/etc/gemgate/tls.key", file, "/srv/gemgate/.dev-issuer"} {
		if !slices.Contains(got, want) {
			t.Errorf("gatewaySecrets = %q, lacks %s", got, want)
		}
	}
	if slices.Contains(got, "/etc/gemgate/tls.crt") {
		t.Errorf("the certificate, which is public, is hidden: %q", got)
	}

	dir := t.TempDir()
	t.Chdir(dir) // dev --tls keeps its CA under certs/ in the working directory
	dc, err := load("dev", []string{"--tls"})
	if err != nil {
		t.Fatal(err)
	}
	if err := devTLS(dc, &devInfo{}); err != nil {
		t.Fatal(err)
	}
	caKey := filepath.Join(dir, "certs", "dev-ca-key.pem")
	if got := dc.gatewaySecrets(""); !slices.Contains(got, caKey) {
		t.Errorf("dev --tls: gatewaySecrets = %q, lacks the development CA's key %s", got, caKey)
	}
}

// hardenHelperEnv runs the test binary as hardenHelper (see TestMain).
const hardenHelperEnv = "GEMGATE_TEST_HARDEN_HELPER"

// hardenHelper runs hardenGateway in a process of its own (it changes the process for good)
// that inherited descriptor 3, and reports whether 3 is close-on-exec afterwards: 0 yes, 3
// no, 2 hardenGateway failed.
func hardenHelper() int {
	if flags, err := unix.FcntlInt(3, unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC != 0 {
		return 4 // not inherited as the test meant
	}
	if err := hardenGateway(); err != nil {
		return 2
	}
	if flags, err := unix.FcntlInt(3, unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		return 3
	}
	return 0
}

// serve and dev start with hardenGateway, which leaves no descriptor gemgate inherited open
// across the exec of a worker (worker.TestWorkerInheritsOnlyItsDescriptors shows that a
// worker then cannot read it).
func TestHardenGatewayClosesInheritedOnExec(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "inherited"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), hardenHelperEnv+"=1")
	cmd.ExtraFiles = []*os.File{f} // descriptor 3 in the helper, not close-on-exec there
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		t.Error("an inherited descriptor stayed open across exec after hardenGateway")
	default:
		t.Fatalf("helper: %v", err)
	}
}
