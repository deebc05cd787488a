package limit

import "testing"

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
