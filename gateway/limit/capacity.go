package limit

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Capacity is what the host gives gemgate: open files and memory. The default session and
// connection caps are derived from it, so that a flood is refused with 503 before gemgate
// runs out of descriptors (EMFILE breaks every user at once) or the host out of memory.
type Capacity struct {
	OpenFiles   int   // RLIMIT_NOFILE soft limit (the Go runtime raises it to the hard limit at start)
	MemoryBytes int64 // the cgroup's memory limit when it has one, else the host's RAM
}

// The sizing rules, documented in docs/configuration.md.
const (
	// reservedFiles are descriptors kept for everything but clients and workers: listeners,
	// the metrics endpoint, issuer and token-exchange connections, the runtime's poller, logs,
	// and workers' pipes while they start.
	reservedFiles = 64
	// filesPerWorker are the descriptors gemgate holds for each running worker: its stdin,
	// stdout and stderr pipe ends and the pidfd it waits on.
	filesPerWorker = 4
	// connectionsPerSession is what a session typically keeps open: its GET stream and a POST.
	connectionsPerSession = 2
	// Half of memory is set aside for workers, at memoryPerWorker each: a demo worker takes
	// about 15 MiB, a GemStone relay more.
	memoryPerWorker = 32 << 20
	// A quarter of memory is set aside for connections, at memoryPerConnection each: buffers,
	// TLS state and goroutine stacks take 10-40 KiB.
	memoryPerConnection = 64 << 10
)

// MaxSessions is the default gateway-wide session cap: as many sessions as half of memory
// allows (memoryPerWorker each) and as descriptors allow (a worker's filesPerWorker plus its
// connections), whichever is fewer; at least 1.
func (c Capacity) MaxSessions() int {
	byMemory := c.MemoryBytes / 2 / memoryPerWorker
	byFiles := int64(c.OpenFiles-reservedFiles) / (filesPerWorker + connectionsPerSession)
	return int(max(1, min(byMemory, byFiles)))
}

// MaxConnections is the default connection cap given the session cap: the descriptors left
// once the reserve and every session's worker are counted, and no more than a quarter of
// memory allows (memoryPerConnection each); at least 16. Since the session cap leaves
// connectionsPerSession descriptors per session, every session can have its connections.
func (c Capacity) MaxConnections(maxSessions int) int {
	byFiles := int64(c.OpenFiles - reservedFiles - max(maxSessions, 0)*filesPerWorker)
	byMemory := c.MemoryBytes / 4 / memoryPerConnection
	return int(max(16, min(byFiles, byMemory)))
}

// HostCapacity reads the open-files limit and the memory available to this process.
func HostCapacity() Capacity {
	c := Capacity{OpenFiles: 1024, MemoryBytes: 1 << 30} // conservative when nothing can be read
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur > 0 {
		c.OpenFiles = int(min(rl.Cur, 1<<30))
	}
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil && si.Totalram > 0 {
		c.MemoryBytes = int64(si.Totalram) * int64(max(si.Unit, 1))
	}
	if limit, ok := cgroupMemoryLimit(); ok && limit < c.MemoryBytes {
		c.MemoryBytes = limit
	}
	return c
}

// cgroupMemoryLimit is the memory limit of this process's cgroup (v2 memory.max or v1
// memory.limit_in_bytes), looked up where a container sees its own cgroup (the mount's
// root) and where a host process sees it (the path in /proc/self/cgroup).
func cgroupMemoryLimit() (int64, bool) {
	candidates := []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 || strings.Contains(parts[2], "..") {
				continue
			}
			switch {
			case parts[0] == "0" && parts[1] == "":
				candidates = append(candidates, "/sys/fs/cgroup"+parts[2]+"/memory.max")
			case strings.Contains(","+parts[1]+",", ",memory,"):
				candidates = append(candidates, "/sys/fs/cgroup/memory"+parts[2]+"/memory.limit_in_bytes")
			}
		}
	}
	best, found := int64(0), false
	for _, p := range candidates {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 { // "max": no limit at this level
			continue
		}
		if !found || n < best {
			best, found = n, true
		}
	}
	return best, found
}
