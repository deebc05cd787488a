package main

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/gemgate/gemgate/gateway/limit"
	"github.com/gemgate/gemgate/worker"
)

// The worker caps: worker_memory_max, worker_pids_max, worker_cpu_max and
// worker_open_files_max. Each is "auto" (sized from the host), "none" or 0 (not capped), or a
// value. How they are enforced, cgroup v2 or rlimits, is decided at start (workerCaps).

// capsAuto is the value of a cap sized from the host.
const capsAuto = "auto"

// defaultWorkerMemory is an eighth of the memory gemgate may use (the host's, or its own
// cgroup's limit), between 1 GiB and 4 GiB: a few runaway workers cannot take the host, and a
// worker's runtime (a Go race build, node) still starts under RLIMIT_DATA.
func defaultWorkerMemory(hostBytes int64) int64 {
	return min(max(hostBytes/8, 1<<30), 4<<30) &^ (1<<20 - 1) // whole MiB
}

// workerCapsValues parses the four settings into the caps; 0 is no cap. Every problem is
// listed.
func (c *Config) workerCapsValues() (worker.Caps, []error) {
	var errs []error
	v := worker.Caps{
		MemoryBytes: capValue(&errs, "worker_memory_max", c.WorkerMemoryMax, defaultWorkerMemory(limit.HostCapacity().MemoryBytes),
			parseBytes, 16<<20, "a size of 16MiB or more (512MiB, 2GiB)"),
		Pids: capValue(&errs, "worker_pids_max", c.WorkerPidsMax, 256, // processes and threads of one worker
			func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) },
			8, "a whole number of 8 or more (a worker's runtime has threads of its own)"),
		// auto: half the host's CPUs, at least one: one worker cannot take them all.
		CPU: capValue(&errs, "worker_cpu_max", c.WorkerCPUMax, max(float64(runtime.NumCPU())/2, 1),
			parseFiniteFloat, 0.01, "a number of CPUs of 0.01 or more (0.5, 2)"),
		// auto: per process, the traditional soft limit.
		OpenFiles: capValue(&errs, "worker_open_files_max", c.WorkerOpenFilesMax, 1024,
			func(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }, 16, "a whole number of 16 or more"),
	}
	return v, errs
}

// capValue reads the cap key from s: auto (or empty) is def, none or 0 no cap (0), anything
// else parsed and at least least, or a problem added to errs.
func capValue[T int64 | uint64 | float64](errs *[]error, key, s string, def T, parse func(string) (T, error), least T, want string) T {
	switch strings.TrimSpace(s) {
	case capsAuto, "":
		return def
	case "none", "0":
		return 0
	}
	n, err := parse(strings.TrimSpace(s))
	if err != nil || n < least {
		*errs = append(*errs, fmt.Errorf("%s: %q is not auto, none or %s", key, s, want))
	}
	return n
}

// parseFiniteFloat is strconv.ParseFloat refusing NaN and the infinities.
func parseFiniteFloat(s string) (float64, error) {
	n, err := strconv.ParseFloat(s, 64)
	if err == nil && (math.IsNaN(n) || math.IsInf(n, 0)) {
		err = fmt.Errorf("%q is not a finite number", s)
	}
	return n, err
}

// parseBytes reads a size: bytes, or a number with K, M, G or T (KiB, MiB, GiB, TiB; binary
// either way, as memory is counted).
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n < 0 || math.IsNaN(n) || n*float64(mult) > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return int64(n * float64(mult)), nil
}

// workerCaps decides how the caps are enforced, and says what that comes to: a delegated
// cgroup v2 when there is one (prepare moves gemgate into its leaf; only serve does), rlimits
// otherwise. RLIMIT_NPROC counts a uid's processes across the host, so under rlimits the
// process cap is per account ({user} in worker_user), times max_workers when all workers
// share one account, and not set for gemgate's own uid, which gemgate's threads share, or uid
// 0, which the kernel exempts.
func (c *Config) workerCaps(prepare bool) (caps worker.Caps, describe string, err error) {
	caps, errs := c.workerCapsValues()
	if len(errs) > 0 {
		return caps, "", errs[0]
	}
	g, err := worker.ProbeCgroups()
	if err == nil && prepare {
		err = g.Prepare()
	}
	if err == nil {
		caps.Cgroup = g
		return caps, "worker caps: " + g.Describe(caps), nil
	}
	var nproc string
	switch {
	case caps.Pids == 0:
		nproc = "worker_pids_max none"
	case strings.Contains(c.WorkerUser, "{user}"):
		caps.Nproc = caps.Pids
		nproc = "one account per user: a user's workers share it"
	case c.WorkerUser != "":
		caps.Nproc = caps.Pids * int64(max(c.MaxWorkers, 1))
		nproc = fmt.Sprintf("one account for all workers: worker_pids_max %d × max_workers %d", caps.Pids, max(c.MaxWorkers, 1))
	case runningAsRoot():
		nproc = "workers run as uid 0, which RLIMIT_NPROC does not hold; set worker_user"
	default:
		nproc = "workers share gemgate's uid, all of whose processes and threads RLIMIT_NPROC would count; set worker_user with {user}, or delegate a cgroup"
	}
	return caps, "worker caps: rlimits: " + worker.RlimitsEnforce(caps, nproc) + "; no delegated cgroup v2: " + err.Error(), nil
}

// capLauncher gives the launcher's workers the caps in force and says, once, which.
func (s *server) capLauncher(l *worker.CommandLauncher) error {
	caps, describe, err := s.cfg.workerCaps(true)
	if err != nil {
		return err
	}
	l.Caps = &caps
	mechanism := "rlimits"
	if caps.Cgroup != nil {
		mechanism = "cgroup2"
	}
	s.log.Info(describe, "mechanism", mechanism, "memory_max", caps.MemoryBytes, "pids_max", max(caps.Pids, caps.Nproc),
		"cpu_max", caps.CPU, "open_files_max", caps.OpenFiles)
	return nil
}

// caps is the caps' part of `gemgate check`: which mechanism would be in force, with the
// values, without changing any cgroup.
func (r *checkReport) caps(c *Config) {
	caps, describe, err := c.workerCaps(false)
	switch {
	case err != nil:
		return // validation has said so
	case caps.Cgroup != nil:
		r.ok(describe)
	default:
		r.warn(describe, "for caps on each worker's processes together (memory, processes, CPU), run gemgate with a cgroup v2 delegated to it: systemd Delegate=yes, or a container with its own cgroup namespace and a writable /sys/fs/cgroup")
	}
}
