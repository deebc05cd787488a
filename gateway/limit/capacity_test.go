package limit

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

const gib = 1 << 30

// TestCapacitySizing pins the formulas of docs/configuration.md: sessions by half of memory
// (32 MiB each) or by descriptors (6 each: a worker's 4, its 2 connections), whichever is
// fewer; connections get what descriptors are left, at most a quarter of memory at 64 KiB.
func TestCapacitySizing(t *testing.T) {
	tests := []struct {
		name                  string
		c                     Capacity
		sessions, connections int
	}{
		{"systemd soft limit: descriptors decide", Capacity{OpenFiles: 1024, MemoryBytes: 16 * gib}, 160, 1024 - 64 - 160*4},
		{"raised limit: memory decides sessions", Capacity{OpenFiles: 65536, MemoryBytes: 64 * gib}, 1024, 65536 - 64 - 1024*4},
		{"8 GiB: memory decides both", Capacity{OpenFiles: 65536, MemoryBytes: 8 * gib}, 128, 8 * gib / (256 << 10)},
		{"huge limit: connections by memory", Capacity{OpenFiles: 1 << 20, MemoryBytes: 64 * gib}, 1024, 64 * gib / (256 << 10)},
		{"tiny host: floors", Capacity{OpenFiles: 70, MemoryBytes: 32 << 20}, 1, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.c.MaxSessions()
			if s != tt.sessions {
				t.Errorf("MaxSessions = %d, want %d", s, tt.sessions)
			}
			if got := tt.c.MaxConnections(s); got != tt.connections {
				t.Errorf("MaxConnections = %d, want %d", got, tt.connections)
			}
			if got := tt.c.MaxConnections(s); s > 1 && got < s*connectionsPerSession {
				t.Errorf("%d connections cannot serve %d sessions", got, s)
			}
		})
	}
}

func TestHostCapacityIsReadable(t *testing.T) {
	c := HostCapacity()
	if c.OpenFiles < 64 || c.MemoryBytes < 64<<20 {
		t.Errorf("HostCapacity() = %+v: implausible", c)
	}
}

// hostRAM is the host's memory as the kernel reports it.
func hostRAM(t *testing.T) int64 {
	t.Helper()
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		t.Skipf("sysinfo: %v", err)
	}
	return int64(si.Totalram) * int64(max(si.Unit, 1))
}

// TestHostCapacityReadsTheHost: with no cgroup limit, the capacity is the process's
// open-files soft limit and the host's RAM, not the conservative fallback (1024 files, 1 GiB).
func TestHostCapacityReadsTheHost(t *testing.T) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	c := hostCapacity(t.TempDir()) // no cgroup files at all
	if want := int(min(rl.Cur, 1<<30)); c.OpenFiles != want {
		t.Errorf("OpenFiles = %d, want the soft limit %d", c.OpenFiles, want)
	}
	if want := hostRAM(t); c.MemoryBytes != want {
		t.Errorf("MemoryBytes = %d, want the host's RAM %d", c.MemoryBytes, want)
	}
}

// TestHostCapacityCgroupLimit: a cgroup memory limit below the host's RAM sizes the defaults,
// read where a container (the mount's root) or a host (the process's cgroup, v2 or v1) has it;
// the smallest limit wins; "max", 0 and a limit above RAM change nothing; a cgroup path that
// climbs out of the hierarchy is not followed.
func TestHostCapacityCgroupLimit(t *testing.T) {
	ram := hostRAM(t)
	const mib = 1 << 20
	tests := []struct {
		name  string
		files map[string]string // under the fake root
		want  int64             // 0: the host's RAM
	}{
		{"container v2", map[string]string{"sys/fs/cgroup/memory.max": "536870912\n"}, 512 * mib},
		{"container v2, no limit", map[string]string{"sys/fs/cgroup/memory.max": "max\n"}, 0},
		{"container v1", map[string]string{"sys/fs/cgroup/memory/memory.limit_in_bytes": "402653184\n"}, 384 * mib},
		{"host v2", map[string]string{
			"proc/self/cgroup": "0::/system.slice/gemgate.service\n",
			"sys/fs/cgroup/system.slice/gemgate.service/memory.max": "268435456\n",
		}, 256 * mib},
		{"host v1, memory among other controllers", map[string]string{
			"proc/self/cgroup": "5:cpu,cpuacct:/\n4:blkio,memory:/gemgate\n0::/\n",
			"sys/fs/cgroup/memory/gemgate/memory.limit_in_bytes": "314572800\n",
		}, 300 * mib},
		{"the smallest of several", map[string]string{
			"proc/self/cgroup":             "0::/a\n",
			"sys/fs/cgroup/memory.max":     "1073741824\n",
			"sys/fs/cgroup/a/memory.max":   "268435456\n",
			"sys/fs/cgroup/a/b/memory.max": "1\n", // not this process's
		}, 256 * mib},
		{"a zero limit is no limit", map[string]string{"sys/fs/cgroup/memory.max": "0\n"}, 0},
		{"above the host's RAM", map[string]string{"sys/fs/cgroup/memory.max": strconv.FormatInt(2*ram, 10)}, 0},
		{"a path climbing out is not followed", map[string]string{
			"proc/self/cgroup":         "0::/../escape\n",
			"sys/fs/cgroup/memory.max": "max\n",
			"sys/fs/escape/memory.max": "268435456\n",
		}, 0},
		{"a malformed line is skipped", map[string]string{
			"proc/self/cgroup":           "0:/a\n",
			"sys/fs/cgroup/a/memory.max": "268435456\n",
			"sys/fs/cgroup/memory.max":   "536870912\n",
		}, 512 * mib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for p, body := range tt.files {
				p = filepath.Join(root, p)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want := tt.want
			if want == 0 || want > ram {
				want = ram
			}
			if got := hostCapacity(root).MemoryBytes; got != want {
				t.Errorf("MemoryBytes = %d, want %d", got, want)
			}
		})
	}
}
