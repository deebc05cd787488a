package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
)

// captureStderr runs f with os.Stderr (where the flag package prints -h) going to a pipe,
// and returns what f wrote there.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	got := make(chan string, 1)
	go func() { b, _ := io.ReadAll(r); got <- string(b) }()
	f()
	os.Stderr = saved
	w.Close()
	return <-got
}

// gemgate -h and --help print the commands, not the serve flags.
func TestHelpListsTheCommands(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "-help", "help"} {
		var out, errb bytes.Buffer
		if code := run([]string{arg}, &out, &errb); code != 0 {
			t.Errorf("%s: exit %d, stderr %q", arg, code, errb.String())
		}
		for _, want := range []string{"serve", "dev", "check", "check --health URL", "worker demo", "version"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: help lacks %q:\n%s", arg, want, out.String())
			}
		}
		if strings.Contains(out.String()+errb.String(), "-allow-insecure-http") {
			t.Errorf("%s printed the serve flags:\n%s", arg, out.String())
		}
	}
}

func TestVersionFlag(t *testing.T) {
	for _, arg := range []string{"version", "--version", "-version"} {
		var out, errb bytes.Buffer
		if code := run([]string{arg}, &out, &errb); code != 0 || out.String() != "gemgate "+version+"\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", arg, code, out.String(), errb.String())
		}
	}
}

// Each command's -h says what the command does before listing the settings; check's names
// --health.
func TestCommandHelp(t *testing.T) {
	for cmd, want := range map[string]string{"serve": "Run the gateway", "dev": "development issuer", "check": "--health URL"} {
		var code int
		help := captureStderr(t, func() {
			var out, errb bytes.Buffer
			code = run([]string{cmd, "-h"}, &out, &errb)
		})
		if code != 0 {
			t.Errorf("%s -h: exit %d", cmd, code)
		}
		if !strings.Contains(help, want) || !strings.Contains(help, "-listen") || !strings.Contains(help, "GEMGATE_") {
			t.Errorf("%s -h lacks %q, the settings or their environment spelling:\n%s", cmd, want, help)
		}
	}
}

// A validator that reports several problems at once counts as several problems.
func TestProblemCountMatchesTheList(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"serve", "--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off",
		"--idle-timeout", "1m", "--streamless-idle-timeout", "5m", "--read-timeout", "10ms", "--stream-loss-grace", "-1s"}, &out, &errb)
	if code == 0 {
		t.Fatal("want a failing exit status")
	}
	listed := strings.Count(errb.String(), "\n  - ")
	if listed != 3 || !strings.Contains(errb.String(), "has 3 problems:") {
		t.Errorf("%d problems listed:\n%s", listed, errb.String())
	}
}

// A busy port names the setting that moves it, in serve, dev and check.
func TestBusyPortNamesTheSetting(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	addr := busy.Addr().String()
	for _, args := range [][]string{
		unsandboxed("serve", "--auth", "none", "--listen", addr, "--metrics-listen", "off"),
		{"dev", "--listen", addr, "--metrics-listen", "off", "--data-dir", t.TempDir()},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code == 0 || !strings.Contains(errb.String(), "already in use") || !strings.Contains(errb.String(), "--listen (GEMGATE_LISTEN)") {
			t.Errorf("%s: exit %d, stderr:\n%s", args[0], code, errb.String())
		}
	}
	var serveErr bytes.Buffer
	if code := run(unsandboxed("serve", "--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", addr), &bytes.Buffer{}, &serveErr); code == 0 ||
		!strings.Contains(serveErr.String(), "already in use") || !strings.Contains(serveErr.String(), "--metrics-listen (GEMGATE_METRICS_LISTEN)") {
		t.Errorf("serve with metrics_listen busy: exit %d, stderr:\n%s", code, serveErr.String())
	}
	var out, errb bytes.Buffer
	code := checkCommand(context.Background(), unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", addr), &out, &errb)
	if code == 0 || !strings.Contains(out.String(), "change metrics_listen (--metrics-listen, GEMGATE_METRICS_LISTEN)") || !strings.Contains(out.String(), "\n1 problem found.") {
		t.Errorf("check: exit %d:\n%s", code, out.String())
	}
}

// A worker process runs on one P, unless GOMAXPROCS in its environment asks for another
// number, which the runtime has applied already and workerProcs leaves alone.
func TestWorkerRunsOnOneProcUnlessTold(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	for _, tc := range []struct {
		env       string
		set, want int
	}{{"", 4, 1}, {"3", 3, 3}} {
		t.Setenv("GOMAXPROCS", tc.env)
		runtime.GOMAXPROCS(tc.set) // as the runtime started it
		workerProcs()
		if got := runtime.GOMAXPROCS(0); got != tc.want {
			t.Errorf("GOMAXPROCS=%q: the worker runs on %d Ps, want %d", tc.env, got, tc.want)
		}
	}
}

// With jwks_url set no discovery document is read, so check's fix for keys it cannot load
// names jwks_url, not the issuer's discovery document (the compose demo's setting, run
// outside its network).
func TestCheckUnreachableJWKSURLNamesIt(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	var out, errb bytes.Buffer
	code := checkCommand(context.Background(), unsandboxed("--issuer", "http://127.0.0.1:8081/realms/x",
		"--jwks-url", "http://"+closed+"/certs", "--listen", "127.0.0.1:0", "--metrics-listen", "off"), &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "make sure jwks_url (http://"+closed+"/certs) is right") ||
		strings.Contains(out.String(), "openid-configuration and its JWKS") {
		t.Errorf("check: exit %d:\n%s", code, out.String())
	}
}

// A flag that does not parse is reported once, with a pointer to -h, not buried in the
// whole usage.
func TestBadFlagIsNotBuriedInTheUsage(t *testing.T) {
	for _, args := range [][]string{{"serve", "--idle-timeout", "10"}, {"dev", "--no-such-flag"}, {"check", "--no-such-flag"}, {"issuer", "--no-such-flag"}} {
		var errb bytes.Buffer
		var code int
		usage := captureStderr(t, func() {
			var out bytes.Buffer
			code = run(args, &out, &errb)
		})
		text := usage + errb.String()
		if code == 0 || strings.Count(text, "\n") != 1 || !strings.Contains(text, "gemgate "+args[0]+" -h lists every setting") {
			t.Errorf("%v: exit %d, stderr:\n%s", args, code, text)
		}
	}
}
