package worker

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Caps bound what one worker may take of the host; a zero field leaves that uncapped. With
// Cgroup set each worker runs in a cgroup v2 of its own that holds it and everything it
// starts; without, the caps rlimits can express are set on the worker's first process before
// it runs anything, and every descendant inherits them (RlimitsEnforce says what they cap).
type Caps struct {
	MemoryBytes int64   // cgroup: memory.max (swap none); rlimits: RLIMIT_DATA per process
	Pids        int64   // cgroup: pids.max (processes and threads of the worker)
	CPU         float64 // cores; cgroup: cpu.max; rlimits cannot cap a rate, so none
	OpenFiles   uint64  // RLIMIT_NOFILE per process, under either mechanism
	// Nproc is RLIMIT_NPROC when rlimits are in force: the kernel counts it over every process
	// and thread of the worker's real uid on the host, not per worker, so the caller sizes it
	// for the account its workers share (0: not set).
	Nproc int64
	// Cgroup, if not nil, is the delegated cgroup whose children the workers run in.
	Cgroup *Cgroups
}

// trampolineName is the argv[0] under which gemgate's own binary sets a worker's rlimits and
// then executes the worker (or bubblewrap): see init below.
const trampolineName = "gemgate-worker-caps"

// rlimitNames are the resource limits the trampoline sets, soft and hard alike, by name.
var rlimitNames = map[string]int{
	"nofile": unix.RLIMIT_NOFILE,
	"data":   unix.RLIMIT_DATA,
	"nproc":  unix.RLIMIT_NPROC,
}

// wrap is the command that starts path with args under the caps' rlimits, through gemgate's
// own binary run as the trampoline. Go cannot set rlimits between fork and exec, and
// prlimit(2) after the start is too late: bubblewrap has forked by then. argv0 is the
// trampoline's argv[0].
func (c *Caps) wrap(path string, args []string) (newPath, argv0 string, newArgs []string) {
	var limits []string
	if c != nil && c.OpenFiles > 0 {
		limits = append(limits, "nofile="+strconv.FormatUint(c.OpenFiles, 10))
	}
	if c != nil && c.Cgroup == nil && c.MemoryBytes > 0 {
		limits = append(limits, "data="+strconv.FormatInt(c.MemoryBytes, 10))
	}
	if c != nil && c.Cgroup == nil && c.Nproc > 0 {
		limits = append(limits, "nproc="+strconv.FormatInt(c.Nproc, 10))
	}
	if len(limits) == 0 {
		return path, "", args
	}
	limits = append(limits, "--", path)
	return "/proc/self/exe", trampolineName, append(limits, args...)
}

// The trampoline: a binary that links this package, started as trampolineName, sets the
// limits it is given and executes the program after "--", before anything of main runs.
func init() {
	if len(os.Args) > 0 && os.Args[0] == trampolineName {
		err := runTrampoline(os.Args[1:])
		fmt.Fprintf(os.Stderr, "gemgate: worker caps: %v\n", err)
		os.Exit(126)
	}
}

// runTrampoline sets the limits in args and executes the command after "--"; it returns only
// on failure.
func runTrampoline(args []string) error {
	for len(args) > 0 && args[0] != "--" {
		name, value, _ := strings.Cut(args[0], "=")
		resource, ok := rlimitNames[name]
		n, err := strconv.ParseUint(value, 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("bad limit %q", args[0])
		}
		if err := setRlimit(resource, n); err != nil {
			return fmt.Errorf("setting %s to %d: %w", name, n, err)
		}
		args = args[1:]
	}
	if len(args) < 2 {
		return errors.New("no command after --")
	}
	return syscall.Exec(args[1], args[1:], os.Environ())
}

// setRlimit sets soft and hard limit to n; an unprivileged process that may not raise its
// hard limit gets the hard limit it has, the most it can have.
func setRlimit(resource int, n uint64) error {
	// syscall.Setrlimit (not unix.Setrlimit): for RLIMIT_NOFILE it also drops the limit the
	// Go runtime would otherwise restore at exec.
	err := syscall.Setrlimit(resource, &syscall.Rlimit{Cur: n, Max: n})
	if errors.Is(err, syscall.EPERM) {
		var cur syscall.Rlimit
		if syscall.Getrlimit(resource, &cur) == nil && n > cur.Max {
			return syscall.Setrlimit(resource, &syscall.Rlimit{Cur: cur.Max, Max: cur.Max})
		}
	}
	return err
}

// RlimitsEnforce says what the rlimits of caps cap, in words for the log and `gemgate check`;
// procs says how the processes are counted, or why they are not capped.
func RlimitsEnforce(c Caps, procs string) string {
	mem, nproc, files := "memory not capped", "processes not capped ("+procs+")", "open files not capped"
	if c.MemoryBytes > 0 {
		mem = fmt.Sprintf("memory %s per process (RLIMIT_DATA: heap and private writable mappings of each process, not the worker's processes together)", FormatBytes(c.MemoryBytes))
	}
	if c.Nproc > 0 {
		nproc = fmt.Sprintf("processes %d (RLIMIT_NPROC: every process and thread of the worker's uid on the host; %s)", c.Nproc, procs)
	}
	if c.OpenFiles > 0 {
		files = fmt.Sprintf("open files %d per process (RLIMIT_NOFILE)", c.OpenFiles)
	}
	cpu := "CPU not capped (RLIMIT_CPU would end a long-lived worker after a total of CPU seconds)"
	return strings.Join([]string{mem, nproc, cpu, files}, "; ")
}

// FormatBytes writes n in the largest binary unit that divides it (512MiB, 3GiB), or bytes.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}
