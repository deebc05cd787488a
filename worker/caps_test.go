package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// The caps' test workers are shell scripts, not this (race-instrumented) test binary: the
// race detector's shadow memory alone is larger than any memory cap worth testing.

// limitsScript reports the worker's own limits and cgroup as a notification, then answers
// each request.
const limitsScript = `awk -v cg="$(grep '^0::' /proc/self/cgroup)" '
/^Max data size/ {data=$4} /^Max processes/ {nproc=$3} /^Max open files/ {nofile=$4}
END {printf "{\"jsonrpc\":\"2.0\",\"method\":\"limits\",\"params\":{\"data\":\"%s\",\"nproc\":\"%s\",\"nofile\":\"%s\",\"cgroup\":\"%s\"}}\n", data, nproc, nofile, cg}' /proc/self/limits
while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id"
done`

// hogScript takes 256 MiB (a string doubled by mawk) once it reads a request, and answers
// it if it could; it exits when it could not.
const hogScript = `read -r line; awk 'BEGIN { s = "x"; for (i = 0; i < 28; i++) s = s s }' || exit 3
printf '{"jsonrpc":"2.0","id":1,"result":{"allocated":"256MiB"}}\n'; exec cat >/dev/null`

// forkScript starts 200 processes once it reads a request, and answers it if it could; dash
// gives up (and exits) at the first fork the kernel refuses.
const forkScript = `read -r line; i=0; while [ $i -lt 200 ]; do sleep 300 & i=$((i+1)); done
printf '{"jsonrpc":"2.0","id":1,"result":{"started":200}}\n'; exec cat >/dev/null`

type capsLimits struct {
	Data, Nproc, Nofile, Cgroup string
}

func startScript(t *testing.T, script string, spec Spec) (*Process, *recorder) {
	t.Helper()
	rec := &recorder{}
	spec.Path, spec.Args = "/bin/sh", []string{"-c", script}
	spec.Env = []string{"PATH=/usr/bin:/bin"}
	spec.OnMessage, spec.StopGrace = rec.add, 200*time.Millisecond
	p, err := Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p, rec
}

func limitsOf(t *testing.T, rec *recorder) capsLimits {
	t.Helper()
	var l capsLimits
	if err := json.Unmarshal(firstMessage(t, rec, "limits"), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// capsAccount is an account of its own for a worker, a bare uid no other process uses:
// RLIMIT_NPROC counts every process of the uid, and root is not held to it at all.
func capsAccount(t *testing.T, n uint32) *Account {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the process cap tests run workers under an account of their own, which needs root; CI runs as root")
	}
	uid := 48000 + n + uint32(os.Getpid()%1000)*4
	return &Account{Name: strconv.Itoa(int(uid)), Uid: uid, Gid: uid, Home: "/"}
}

// Under rlimits, the caps are the worker's own limits from its first instruction on, in the
// sandbox too: bubblewrap's processes inherit them (prlimit on the started pid would miss
// the sandbox's processes, forked by then).
func TestRlimitCapsReachTheWorker(t *testing.T) {
	caps := &Caps{MemoryBytes: 96 << 20, OpenFiles: 200, Nproc: 77}
	for _, sb := range []*Sandbox{nil, {Bwrap: probe(t, nil)}} {
		_, rec := startScript(t, limitsScript, Spec{Caps: caps, Sandbox: sb})
		got := limitsOf(t, rec)
		want := capsLimits{Data: strconv.Itoa(96 << 20), Nproc: "77", Nofile: "200", Cgroup: got.Cgroup}
		if got != want {
			t.Errorf("sandbox %v: worker limits %+v, want %+v", sb != nil, got, want)
		}
	}
	// Without caps the worker has gemgate's own limits.
	_, rec := startScript(t, limitsScript, Spec{})
	if got := limitsOf(t, rec); got.Nofile == "200" || got.Data != "unlimited" {
		t.Errorf("uncapped worker has limits %+v", got)
	}
}

// A worker past its memory cap fails alone: its pending call gets an error with the caller's
// id, and a neighbour keeps answering.
func TestMemoryCapFailsOnlyThatWorker(t *testing.T) {
	caps := &Caps{MemoryBytes: 64 << 20, OpenFiles: 1024}
	neighbour, _ := startScript(t, limitsScript, Spec{Caps: caps})
	hog, _ := startScript(t, hogScript, Spec{Caps: caps})
	assertCapFails(t, hog, neighbour)
}

// A worker past its process cap fails alone. RLIMIT_NPROC holds a uid, so the worker runs
// as an account of its own.
func TestProcessCapFailsOnlyThatWorker(t *testing.T) {
	caps := &Caps{OpenFiles: 1024, Nproc: 30}
	neighbour, _ := startScript(t, limitsScript, Spec{Caps: caps, RunAs: capsAccount(t, 1)})
	forker, _ := startScript(t, forkScript, Spec{Caps: caps, RunAs: capsAccount(t, 2)})
	assertCapFails(t, forker, neighbour)
}

func assertCapFails(t *testing.T, capped, neighbour *Process) {
	t.Helper()
	c, err := capped.Send(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`"mine-7"`), Method: "tools/call"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-c.Result():
		if m.Error == nil || string(m.ID) != `"mine-7"` {
			t.Errorf("the capped worker's call got %s, want an error with its own id", m.Encode())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the capped worker's call was not failed: the cap did not stop it")
	}
	select {
	case <-capped.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the capped worker did not end")
	}
	if m := call(t, neighbour, `1`, "ping", ""); m.Error != nil {
		t.Errorf("the neighbour failed too: %s", m.Encode())
	}
}

// The cgroup's settings: what each cap writes into a worker's cgroup.
func TestCgroupCreateWritesCaps(t *testing.T) {
	g := &Cgroups{Dir: t.TempDir(), Controllers: []string{"memory", "pids", "cpu"}}
	cg, err := g.create(&Caps{MemoryBytes: 512 << 20, Pids: 128, CPU: 1.5, OpenFiles: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"memory.max": "536870912", "pids.max": "128", "cpu.max": "150000 100000"} {
		if b, err := os.ReadFile(filepath.Join(cg.dir, file)); err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", file, b, err, want)
		}
	}
	os.WriteFile(filepath.Join(cg.dir, "pids.events"), []byte("max 3\n"), 0o644)
	if hit := cg.capHit(); hit != "processes" {
		t.Errorf("capHit = %q, want processes", hit)
	}
	os.WriteFile(filepath.Join(cg.dir, "memory.events"), []byte("low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n"), 0o644)
	if hit := cg.capHit(); hit != "memory" {
		t.Errorf("capHit = %q, want memory", hit)
	}
	// Without the cpu controller no cpu.max is written; a cap of 0 writes nothing.
	g.Controllers = []string{"memory", "pids"}
	cg2, err := g.create(&Caps{Pids: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"cpu.max", "memory.max"} {
		if _, err := os.Stat(filepath.Join(cg2.dir, file)); err == nil {
			t.Errorf("%s written with no cap for it", file)
		}
	}
	cg2.fd.Close()
	cg.fd.Close()
}

// Which cgroups count as delegated: never the host's root, only with memory and pids, only
// writable.
func TestProbeCgroupDir(t *testing.T) {
	mk := func(files map[string]string) string {
		dir := t.TempDir()
		for f, v := range files {
			os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644)
		}
		return dir
	}
	base := map[string]string{"cgroup.type": "domain\n", "cgroup.procs": "", "cgroup.subtree_control": ""}
	with := func(ctl string) map[string]string {
		m := map[string]string{"cgroup.controllers": ctl}
		for k, v := range base {
			m[k] = v
		}
		return m
	}
	if _, err := probeCgroupDir(mk(map[string]string{"cgroup.controllers": "memory pids cpu", "cgroup.procs": ""})); err == nil || !strings.Contains(err.Error(), "root cgroup") {
		t.Errorf("the root cgroup: %v", err)
	}
	if _, err := probeCgroupDir(mk(with("cpu io hugetlb"))); err == nil || !strings.Contains(err.Error(), "memory, pids") {
		t.Errorf("no memory, no pids: %v", err)
	}
	g, err := probeCgroupDir(mk(with("cpuset io memory pids")))
	if err != nil || g.HasCPU() {
		t.Errorf("memory and pids without cpu: %+v %v", g, err)
	}
	if g, err := probeCgroupDir(mk(with("cpu memory pids"))); err != nil || !g.HasCPU() {
		t.Errorf("all three: %+v %v", g, err)
	}
}

func TestOwnCgroupDir(t *testing.T) {
	for _, tc := range []struct{ cgroup, mountinfo, want string }{
		{"0::/system.slice/gemgate.service\n", "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n", "/sys/fs/cgroup/system.slice/gemgate.service"},
		{"12:pids:/\n0::/\n", "22 1 0:20 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n", "/sys/fs/cgroup/unified"},
		// A container that sees the host's hierarchy from its own cgroup down.
		{"0::/kubepods/pod1/c1\n", "40 30 0:26 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup rw\n", "/sys/fs/cgroup/c1"},
		{"0::/a\n", "40 30 0:26 / /mnt/my\\040cg rw - cgroup2 cgroup rw\n", "/mnt/my cg/a"},
	} {
		got, err := ownCgroupDir([]byte(tc.cgroup), []byte(tc.mountinfo))
		if err != nil || got != tc.want {
			t.Errorf("ownCgroupDir(%q) = %q, %v; want %q", tc.cgroup, got, err, tc.want)
		}
	}
	if _, err := ownCgroupDir([]byte("4:memory:/x\n"), nil); err == nil {
		t.Error("no cgroup v2 line: no error")
	}
}

// Prepare moves gemgate into its leaf and enables the controllers for the workers.
func TestCgroupPrepare(t *testing.T) {
	g := &Cgroups{Dir: t.TempDir(), Controllers: []string{"memory", "pids"}}
	stale := filepath.Join(g.Dir, "worker-1-1")
	os.Mkdir(stale, 0o755)
	if err := g.Prepare(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(g.Dir, leafName, "cgroup.procs")); string(b) != strconv.Itoa(os.Getpid()) {
		t.Errorf("leaf cgroup.procs = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(g.Dir, "cgroup.subtree_control")); string(b) != "+memory +pids" {
		t.Errorf("subtree_control = %q", b)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("an empty worker cgroup left by an earlier run stays")
	}
}

// The worker starts inside a cgroup of its own (clone3 into the cgroup, so nothing of it runs
// outside), and the cgroup goes when the worker ends. On a host with a cgroup v2 mount root
// may write to; the caps themselves need the controllers, which hosts with cgroup v1 for
// memory and pids keep out of v2, so this one places the worker only.
func TestWorkerStartsInItsOwnCgroup(t *testing.T) {
	parent := writableCgroup2(t)
	g := &Cgroups{Dir: parent}
	p, rec := startScript(t, limitsScript, Spec{Caps: &Caps{OpenFiles: 300, Cgroup: g}})
	got := limitsOf(t, rec)
	var dir string
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), workerPrefix) {
			dir = filepath.Join(parent, e.Name())
		}
	}
	if dir == "" {
		t.Fatalf("no worker cgroup under %s", parent)
	}
	if !strings.HasSuffix(got.Cgroup, "/"+filepath.Base(dir)) || got.Nofile != "300" {
		t.Errorf("worker in cgroup %q with %s open files; want %s and 300", got.Cgroup, got.Nofile, dir)
	}
	procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if !strings.Contains(string(procs), strconv.Itoa(p.Pid())) {
		t.Errorf("the worker %d is not in %s: %q", p.Pid(), dir, procs)
	}
	p.Stop()
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the worker's cgroup %s outlived it", dir)
	}
}

// writableCgroup2 is a fresh cgroup under gemgate's own delegated one, or under a cgroup v2
// mount root may write to; it is removed after the test.
func writableCgroup2(t *testing.T) string {
	t.Helper()
	var base string
	if g, err := ProbeCgroups(); err == nil {
		base = g.Dir
	} else if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			for i, x := range fields {
				if x == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && base == "" {
					base = fields[4]
				}
			}
		}
		f.Close()
	}
	dir := filepath.Join(base, "gemgate-test-"+strconv.Itoa(os.Getpid()))
	if base == "" || os.Mkdir(dir, 0o755) != nil {
		t.Fatalf("this test needs a cgroup v2 it may write (root, a cgroup2 mount): found %q", base)
	}
	t.Cleanup(func() {
		subs, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, s := range subs {
			os.Remove(s)
		}
		os.Remove(dir)
	})
	return dir
}
