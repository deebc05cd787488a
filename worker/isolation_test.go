package worker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// firstMessage waits for the first message the worker sends on its own.
func firstMessage(t *testing.T, rec *recorder, method string) json.RawMessage {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, m := range rec.all() {
			if m.Method == method {
				return m.Params
			}
		}
	}
	t.Fatalf("the worker never sent %s", method)
	return nil
}

func testExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// The credential reaches the worker on its descriptor and nowhere a neighbour could read it:
// not in its environment, not on its command line.
func TestCredentialOnDescriptorNotInEnvironment(t *testing.T) {
	const canary = "credential-canary-7f3a"
	rec := &recorder{}
	p := startSpec(t, "credential", Spec{Credential: []byte(canary), OnMessage: rec.add})
	var got struct{ FD, Env string }
	json.Unmarshal(firstMessage(t, rec, "cred"), &got)
	if got.FD != canary || got.Env != "" {
		t.Errorf("worker read fd %q env %q; want the credential on the descriptor only", got.FD, got.Env)
	}
	notInProc(t, p.Pid(), canary)
}

// notInProc fails t if the worker's environment or command line, which a neighbour of its
// account could read in /proc, holds canary.
func notInProc(t *testing.T, pid int, canary string) {
	t.Helper()
	for _, f := range []string{"environ", "cmdline"} {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), canary) {
			t.Errorf("the credential is in the worker's /proc/<pid>/%s", f)
		}
	}
}

func probe(t *testing.T, runAs *Account) string {
	t.Helper()
	bwrap, err := ProbeSandbox(context.Background(), runAs)
	if err != nil {
		t.Fatalf("the sandbox tests need a working bubblewrap (apt-get install bubblewrap): %v", err)
	}
	return bwrap
}

// The attack: a worker scans /proc/*/environ for another worker's secret. Unconfined it finds
// it (the control); in the sandbox it sees no other process at all.
func TestSandboxHidesOtherWorkers(t *testing.T) {
	bwrap := probe(t, nil)
	const secret = "neighbour-secret-91c2"
	victimEnv := append(os.Environ(), "GEMGATE_TEST_WORKER=echo", "NEIGHBOUR_SECRET="+secret)
	v, err := Start(Spec{Path: testExe(t), Env: victimEnv, StopGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Stop)
	for _, tc := range []struct {
		name    string
		sandbox *Sandbox
		found   bool
	}{
		{"unconfined", nil, true},
		{"sandbox", &Sandbox{Bwrap: bwrap, Readable: []string{testExe(t)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			// The needle travels on the credential descriptor: in the environment, bwrap's own
			// process (the hostile worker's parent) would hold it too.
			env := append(os.Environ(), "GEMGATE_TEST_WORKER=scan")
			h, err := Start(Spec{Path: testExe(t), Env: env, Sandbox: tc.sandbox, Credential: []byte(secret), OnMessage: rec.add, StopGrace: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(h.Stop)
			var got struct {
				Visible int
				Found   string
			}
			json.Unmarshal(firstMessage(t, rec, "scan"), &got)
			if (got.Found != "") != tc.found {
				t.Errorf("found the neighbour's secret at %q; want found=%v", got.Found, tc.found)
			}
			if tc.sandbox != nil && got.Visible > 2 {
				t.Errorf("the sandboxed worker sees %d other processes; want only bwrap's init", got.Visible)
			}
		})
	}
}

// A sandboxed worker still serves, reads its credential and dies with its sandbox.
func TestSandboxedWorkerServes(t *testing.T) {
	bwrap := probe(t, nil)
	rec := &recorder{}
	p := startSpec(t, "credential", Spec{Sandbox: &Sandbox{Bwrap: bwrap, Readable: []string{testExe(t)}, Writable: []string{t.TempDir()}},
		Credential: []byte("tok"), OnMessage: rec.add})
	var got struct{ FD string }
	json.Unmarshal(firstMessage(t, rec, "cred"), &got)
	if got.FD != "tok" {
		t.Errorf("credential on the descriptor = %q inside the sandbox", got.FD)
	}
	if m := call(t, p, `"x"`, "ping", ""); m.Result == nil {
		t.Fatalf("sandboxed worker: %s", m.Encode())
	}
	p.Stop()
	if alive(p.Pid()) {
		t.Error("bwrap outlived Stop")
	}
}

// With an account, the kernel runs the worker (and bwrap) under that uid.
func TestWorkerRunsAsAccount(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("running a worker as another account needs root; CI runs as root")
	}
	nobody, err := LookupAccount("nobody")
	if err != nil {
		t.Fatal(err)
	}
	// The test binary must be reachable by nobody: copy it somewhere world-readable.
	dir, err := os.MkdirTemp("", "gemgate-worker-account-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	exe := dir + "/worker.test"
	b, err := os.ReadFile(testExe(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	bwrap := probe(t, nobody)
	for _, sb := range []*Sandbox{nil, {Bwrap: bwrap, Readable: []string{exe}}} {
		rec := &recorder{}
		p, err := Start(Spec{Path: exe, Env: append(os.Environ(), "GEMGATE_TEST_WORKER=credential"), RunAs: nobody,
			Sandbox: sb, Credential: []byte("tok"), OnMessage: rec.add, StopGrace: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			FD  string
			UID int
		}
		json.Unmarshal(firstMessage(t, rec, "cred"), &got)
		if got.UID != int(nobody.Uid) || got.FD != "tok" {
			t.Errorf("sandbox=%v: worker uid %d credential %q; want %d and the credential", sb != nil, got.UID, got.FD, nobody.Uid)
		}
		p.Stop()
	}
}

// An account's groups: root's group never, as a supplementary group (left out) or as the
// primary one (refused: a process must have one), so a worker reads nothing only root's
// group may.
func TestAccountLeavesOutRootsGroup(t *testing.T) {
	u := &user.User{Username: "svc", Uid: "1500", Gid: "1500", HomeDir: "/home/svc"}
	a, err := accountOf("svc", u, []string{"1500", "0", "27"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Uid != 1500 || a.Gid != 1500 || !slices.Equal(a.Groups, []uint32{1500, 27}) {
		t.Errorf("account %+v, want uid and gid 1500 and groups 1500, 27 (not 0)", a)
	}
	u.Gid = "0"
	if a, err := accountOf("svc", u, nil); !errors.Is(err, ErrRootGroup) {
		t.Errorf("an account whose primary group is root's: %+v, %v, want ErrRootGroup", a, err)
	}
	u.Uid, u.Gid = "0", "1500"
	if _, err := accountOf("svc", u, nil); !errors.Is(err, ErrRootAccount) {
		t.Errorf("uid 0: %v, want ErrRootAccount", err)
	}
}

func TestAccountFor(t *testing.T) {
	nobody, err := LookupAccount("nobody")
	if err != nil {
		t.Skipf("this host has no nobody account: %v", err)
	}
	for _, tc := range []struct {
		template, user string
		uid            uint32
		err            bool
		root           bool
	}{
		{"nobody", "alice", nobody.Uid, false, false},
		// A templated name comes from a token: never a uid, never a system account.
		{"{user}", "nobody", 0, true, false},
		{"{user}", "daemon", 0, true, false},
		{"{user}", "1", 0, true, false},
		{"{user}", "4242", 0, true, false},
		{"65534", "", 65534, false, false},
		{"root", "", 0, true, true},
		{"0", "", 0, true, true},
		{"{user}", "root", 0, true, true},
		{"{user}", "", 0, true, false},
		{"{user}", "-rf", 0, true, false},
		{"{user}", "../etc", 0, true, false},
		{"gemgate-no-such-account-x", "", 0, true, false},
	} {
		a, err := AccountFor(tc.template, tc.user)
		if (err != nil) != tc.err || (tc.root && !errors.Is(err, ErrRootAccount)) {
			t.Errorf("AccountFor(%q, %q) error = %v, want error=%v root=%v", tc.template, tc.user, err, tc.err, tc.root)
			continue
		}
		if err == nil && a.Uid != tc.uid {
			t.Errorf("AccountFor(%q, %q) uid = %d, want %d", tc.template, tc.user, a.Uid, tc.uid)
		}
	}
}

// Invariant 8: a descendant that leaves its worker's session (double fork and setsid) is
// adopted by gemgate as a subreaper and killed when the worker ends.
func TestEscapedDescendantIsReapedWhenTheWorkerEnds(t *testing.T) {
	rec := &recorder{}
	p := startSpec(t, "daemonize", Spec{OnMessage: rec.add})
	var got struct{ Pid int }
	json.Unmarshal(firstMessage(t, rec, "child"), &got)
	if got.Pid == 0 || !alive(got.Pid) {
		t.Fatalf("the escaped sleeper %d is not running", got.Pid)
	}
	p.Stop()
	waitGone(t, got.Pid)
}

// A descriptor gemgate inherited that is not close-on-exec (a socket-activated listener, a
// secret handed on a descriptor, a leak from gemgate's parent) never reaches a worker,
// sandboxed or not, once CloseInheritedOnExec has run, as gemgate runs it at start
// (hardenGateway): a worker gets 0, 1, 2 and the credential's 3. Before it runs, the same
// worker does read the descriptor, so the check can fail.
func TestWorkerInheritsOnlyItsDescriptors(t *testing.T) {
	bwrap := probe(t, nil)
	const canary = "gateway-secret-on-an-inherited-fd"
	f := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(f, []byte(canary), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(f, syscall.O_RDONLY, 0) // no O_CLOEXEC: as inherited from a parent
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	read := func(sb *Sandbox) string {
		return workerFound(t, sb, "readfd", "fd", "GEMGATE_TEST_FD="+strconv.Itoa(fd))
	}
	if got := read(nil); got != canary {
		t.Fatalf("before CloseInheritedOnExec the worker read %q from descriptor %d, want the canary: the check below could not fail", got, fd)
	}
	CloseInheritedOnExec()
	for _, sb := range []*Sandbox{nil, {Bwrap: bwrap, Readable: []string{testExe(t)}}} {
		if got := read(sb); got != "nothing" {
			t.Errorf("sandbox=%v: the worker read gemgate's descriptor %d: %q", sb != nil, fd, got)
		}
	}
}

// gemgate's own secrets (its TLS key, config files, the development issuer's state) are
// hidden from a sandboxed worker that otherwise sees the host read-only and may run as
// gemgate's uid: a file cannot be read (it is covered by the host's /dev/null, on a mount
// without devices), a directory is empty, even inside a writable bind.
func TestSandboxHidesGatewaySecrets(t *testing.T) {
	bwrap := probe(t, nil)
	// Not under /tmp, which the sandbox replaces: a host path it would otherwise show.
	dir, err := os.MkdirTemp("/var/tmp", "gemgate-hidden-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	key, data := filepath.Join(dir, "tls.key"), filepath.Join(dir, "data")
	state := filepath.Join(data, ".dev-issuer")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{key, filepath.Join(state, "key.pem")} {
		if err := os.WriteFile(f, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sb := &Sandbox{Bwrap: bwrap, Readable: []string{testExe(t)}, Writable: []string{data}, Hidden: []string{key, state, filepath.Join(dir, "absent")}}
	found := workerFound(t, sb, "readpath", "read", "GEMGATE_TEST_PATHS="+key+":"+state+":"+data)
	// The key does not read, the state directory is empty, the data directory still shows it.
	if found != "error|0 entries|1 entries" {
		t.Errorf("the worker read %q, want the key unreadable, the state directory empty and data_dir as it is", found)
	}
}

// workerFound starts the test worker in mode (sandboxed by sb, or not), with env added, and
// returns the "found" of its first message of method; the worker is stopped before it returns.
func workerFound(t *testing.T, sb *Sandbox, mode, method string, env ...string) string {
	t.Helper()
	rec := &recorder{}
	p, err := Start(Spec{Path: testExe(t), Env: append(append(os.Environ(), "GEMGATE_TEST_WORKER="+mode), env...),
		Sandbox: sb, OnMessage: rec.add, StopGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	var got struct{ Found string }
	json.Unmarshal(firstMessage(t, rec, method), &got)
	return got.Found
}
