package limit

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Capacity is the host's open files and memory, from which the default caps derive: a flood
// is refused with 503 before descriptors (EMFILE breaks every user at once) or memory run out.
type Capacity struct {
	OpenFiles   int   // RLIMIT_NOFILE soft limit (the Go runtime raises it to the hard limit at start)
	MemoryBytes int64 // the cgroup's memory limit when it has one, else the host's RAM
}

// The sizing rules, documented in docs/configuration.md.
const (
	reservedFiles         = 64       // listeners, issuer connections, logs, starting workers' pipes
	filesPerWorker        = 4        // three pipe ends and a pidfd
	connectionsPerSession = 2        // its GET stream and a POST
	memoryPerWorker       = 32 << 20 // of half of memory: a demo worker takes ~15 MiB
	memoryPerConnection   = 64 << 10 // of a quarter of memory: buffers, TLS, stacks take 10-40 KiB
)

// MaxSessions is the default session cap: what half of memory and the descriptors allow.
func (c Capacity) MaxSessions() int {
	byMemory := c.MemoryBytes / 2 / memoryPerWorker
	byFiles := int64(c.OpenFiles-reservedFiles) / (filesPerWorker + connectionsPerSession)
	return int(max(1, min(byMemory, byFiles)))
}

// MaxConnections is the default connection cap: the descriptors sessions leave, within a
// quarter of memory.
func (c Capacity) MaxConnections(maxSessions int) int {
	byFiles := int64(c.OpenFiles - reservedFiles - max(maxSessions, 0)*filesPerWorker)
	byMemory := c.MemoryBytes / 4 / memoryPerConnection
	return int(max(16, min(byFiles, byMemory)))
}

// HostCapacity reads the open-files limit and the memory available to this process.
func HostCapacity() Capacity { return hostCapacity("") }

// hostCapacity is HostCapacity with the cgroup files read under root ("" is /): a test seam.
func hostCapacity(root string) Capacity {
	c := Capacity{OpenFiles: 1024, MemoryBytes: 1 << 30} // conservative when nothing can be read
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur > 0 {
		c.OpenFiles = int(min(rl.Cur, 1<<30))
	}
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil && si.Totalram > 0 {
		c.MemoryBytes = int64(si.Totalram) * int64(max(si.Unit, 1))
	}
	if limit, ok := cgroupMemoryLimit(root); ok && limit < c.MemoryBytes {
		c.MemoryBytes = limit
	}
	return c
}

// cgroupMemoryLimit is this process's cgroup memory limit (v2 or v1), seen from a container
// (the mount's root) or a host (/proc/self/cgroup), under root.
func cgroupMemoryLimit(root string) (int64, bool) {
	candidates := []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}
	if b, err := os.ReadFile(root + "/proc/self/cgroup"); err == nil {
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
		b, err := os.ReadFile(root + p)
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
