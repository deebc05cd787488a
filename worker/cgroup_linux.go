package worker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroups is a cgroup v2 delegated to gemgate (systemd's Delegate=yes, or a container with its
// own cgroup namespace and a writable /sys/fs/cgroup). gemgate moves into a leaf child, since
// a cgroup with controllers for its children may hold no process. Each worker starts directly
// in a child of its own (CLONE_INTO_CGROUP), removed when the worker ends.
type Cgroups struct {
	Dir         string   // gemgate's own cgroup, where it was started
	Controllers []string // of memory, pids and cpu: those gemgate may use
	seq         atomic.Int64
}

// capControllers are the controllers the caps use; memory and pids are required.
var capControllers = []string{"memory", "pids", "cpu"}

// ProbeCgroups finds gemgate's own cgroup v2 and tells whether it is delegated
// (probeCgroupDir). It changes nothing.
func ProbeCgroups() (*Cgroups, error) {
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	dir, err := ownCgroupDir(cg, mounts)
	if err != nil {
		return nil, err
	}
	return probeCgroupDir(dir)
}

// ownCgroupDir is this process's cgroup v2 directory, from /proc/self/cgroup and mountinfo.
func ownCgroupDir(cgroup, mountinfo []byte) (string, error) {
	var path string
	found := false
	for _, line := range strings.Split(string(cgroup), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path, found = p, true
		}
	}
	if !found {
		return "", errors.New("this process is in no cgroup v2 (no 0:: line in /proc/self/cgroup)")
	}
	for line := range strings.Lines(string(mountinfo)) {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(line)
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) || fields[sep+1] != "cgroup2" {
			continue
		}
		root, mnt := mountUnescaper.Replace(fields[3]), mountUnescaper.Replace(fields[4])
		rel := path
		if root != "/" {
			r, ok := strings.CutPrefix(path, root)
			if !ok || (r != "" && !strings.HasPrefix(r, "/")) {
				continue
			}
			rel = r
		}
		return filepath.Join(mnt, rel), nil
	}
	return "", errors.New("no cgroup v2 file system is mounted that shows this process's cgroup")
}

// mountUnescaper undoes the octal escapes mountinfo writes for the characters it escapes in
// a path: space, tab, newline and backslash.
var mountUnescaper = strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)

// probeCgroupDir checks that dir is a cgroup gemgate may split: it is not the root of the
// hierarchy (which has no cgroup.type and is the whole host's), it offers memory and pids,
// and its control files are writable.
func probeCgroupDir(dir string) (*Cgroups, error) {
	if _, err := os.Stat(filepath.Join(dir, "cgroup.type")); err != nil {
		return nil, fmt.Errorf("cgroup v2 at %s is the host's root cgroup, not one delegated to gemgate", dir)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("cgroup v2 at %s: %w", dir, err)
	}
	have := strings.Fields(string(raw))
	g := &Cgroups{Dir: dir}
	var missing []string
	for _, c := range capControllers {
		if slices.Contains(have, c) {
			g.Controllers = append(g.Controllers, c)
		} else if c != "cpu" {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("cgroup v2 at %s does not offer the %s controller(s) (it has: %s)", dir, strings.Join(missing, ", "), strings.Join(have, " "))
	}
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control"} {
		if err := unix.Access(filepath.Join(dir, f), unix.W_OK); err != nil {
			return nil, fmt.Errorf("cgroup v2 at %s is not writable by gemgate (%s: %v)", dir, filepath.Join(dir, f), err)
		}
	}
	return g, nil
}

// HasCPU tells whether cpu.max can be set on the workers' cgroups.
func (g *Cgroups) HasCPU() bool { return slices.Contains(g.Controllers, "cpu") }

// leafName is the child that gemgate's own process moves into.
const leafName = "gemgate"

// workerPrefix names the workers' cgroups.
const workerPrefix = "worker-"

// Prepare moves gemgate into its leaf and enables the controllers for the workers' cgroups.
// Workers' cgroups left by an earlier gemgate in the same cgroup are removed when empty. On
// failure gemgate is moved back where it was.
func (g *Cgroups) Prepare() error {
	leaf := filepath.Join(g.Dir, leafName)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cgroup v2 at %s: %w", g.Dir, err)
	}
	self := strconv.Itoa(os.Getpid())
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(self), 0); err != nil {
		return fmt.Errorf("cgroup v2: moving gemgate into %s: %w", leaf, err)
	}
	enable := "+" + strings.Join(g.Controllers, " +")
	if err := os.WriteFile(filepath.Join(g.Dir, "cgroup.subtree_control"), []byte(enable), 0); err != nil {
		_ = os.WriteFile(filepath.Join(g.Dir, "cgroup.procs"), []byte(self), 0)
		return fmt.Errorf("cgroup v2 at %s: enabling %s for its children (another process shares gemgate's cgroup?): %w", g.Dir, enable, err)
	}
	stale, _ := filepath.Glob(filepath.Join(g.Dir, workerPrefix+"*"))
	for _, d := range stale {
		_ = os.Remove(d)
	}
	return nil
}

// cgroup is one worker's cgroup.
type cgroup struct {
	dir string
	fd  *os.File // open until the worker has started in it (Start closes it)
}

// create makes a worker's cgroup with the caps written into it, open for clone3.
func (g *Cgroups) create(c *Caps) (*cgroup, error) {
	dir := filepath.Join(g.Dir, fmt.Sprintf("%s%d-%d", workerPrefix, os.Getpid(), g.seq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("worker cgroup: %w", err)
	}
	var settings [][2]string
	if c.MemoryBytes > 0 {
		settings = append(settings, [2]string{"memory.max", strconv.FormatInt(c.MemoryBytes, 10)})
		if _, err := os.Stat(filepath.Join(dir, "memory.swap.max")); err == nil {
			// Swap would let a worker hold more than its cap, slowly.
			settings = append(settings, [2]string{"memory.swap.max", "0"})
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "memory.oom.group")); err == nil {
		// Out of memory, the worker ends whole, not one process of it at a time.
		settings = append(settings, [2]string{"memory.oom.group", "1"})
	}
	if c.Pids > 0 {
		settings = append(settings, [2]string{"pids.max", strconv.FormatInt(c.Pids, 10)})
	}
	if c.CPU > 0 && g.HasCPU() {
		settings = append(settings, [2]string{"cpu.max", cpuMax(c.CPU)})
	}
	for _, s := range settings {
		if err := os.WriteFile(filepath.Join(dir, s[0]), []byte(s[1]), 0); err != nil {
			_ = os.Remove(dir)
			return nil, fmt.Errorf("worker cgroup: %s = %s: %w", s[0], s[1], err)
		}
	}
	fd, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("worker cgroup: %w", err)
	}
	return &cgroup{dir: dir, fd: fd}, nil
}

// cpuPeriod is cpu.max's period, the kernel's default (100 ms).
const cpuPeriod = 100000

// cpuMax is cpu.max for a share of cores: a quota of CPU time per period.
func cpuMax(cores float64) string {
	quota := int64(cores*cpuPeriod + 0.5)
	if quota < 1000 {
		quota = 1000 // the kernel's least quota (1 ms)
	}
	return strconv.FormatInt(quota, 10) + " " + strconv.Itoa(cpuPeriod)
}

// capHit names the cap the kernel enforced on the worker, from its cgroup's event counters:
// "memory" when it was killed for memory, "processes" when a fork was refused; "" otherwise.
func (cg *cgroup) capHit() string {
	if eventCount(filepath.Join(cg.dir, "memory.events"), "oom_kill") > 0 {
		return "memory"
	}
	if eventCount(filepath.Join(cg.dir, "pids.events"), "max") > 0 {
		return "processes"
	}
	return ""
}

// eventCount is the count of name in a cgroup's "name count" lines; 0 if it has none.
func eventCount(path, name string) int64 {
	raw, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// remove kills whatever is left in the worker's cgroup and removes it; a cgroup can be removed
// only once the last of its processes is gone, which takes a moment after the kill.
func (cg *cgroup) remove() error {
	cg.fd.Close()
	_ = os.WriteFile(filepath.Join(cg.dir, "cgroup.kill"), []byte("1"), 0)
	deadline := time.Now().Add(5 * time.Second)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err := os.Remove(cg.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("removing worker cgroup %s: %w", cg.dir, err)
		}
		time.Sleep(wait)
	}
}

// Describe is the cgroup and the caps, for the log and `gemgate check`.
func (g *Cgroups) Describe(c Caps) string {
	mem, pids, cpu, files := "none", "none", "none", "none"
	if c.MemoryBytes > 0 {
		mem = FormatBytes(c.MemoryBytes)
	}
	if c.Pids > 0 {
		pids = strconv.FormatInt(c.Pids, 10)
	}
	if c.CPU > 0 {
		cpu = strconv.FormatFloat(c.CPU, 'f', -1, 64) + " cores (cpu.max " + cpuMax(c.CPU) + ")"
		if !g.HasCPU() {
			cpu = "not capped (the cgroup does not offer the cpu controller)"
		}
	}
	if c.OpenFiles > 0 {
		files = strconv.FormatUint(c.OpenFiles, 10) + " per process (RLIMIT_NOFILE)"
	}
	return fmt.Sprintf("cgroup v2 at %s, one child per worker: memory.max %s (swap none), pids.max %s, cpu %s, open files %s",
		g.Dir, mem, pids, cpu, files)
}
