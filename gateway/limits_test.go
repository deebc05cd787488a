package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// TestLimitsDefaults: zero means a default that is never unlimited; NoLimit lifts a cap; the
// per-user cap never exceeds the gateway's.
func TestLimitsDefaults(t *testing.T) {
	host := Capacity{OpenFiles: 65536, MemoryBytes: 8 * gib} // 128 sessions
	tests := []struct {
		name string
		in   Limits
		want Limits
	}{
		{"zero", Limits{Capacity: host}, Limits{Capacity: host, MaxSessions: 128, MaxSessionsPerUser: 16, WorkerStartRate: 2, WorkerStartBurst: 8}},
		{"lifted", Limits{Capacity: host, MaxSessions: NoLimit, MaxSessionsPerUser: NoLimit, WorkerStartRate: NoLimit},
			Limits{Capacity: host, WorkerStartBurst: 8}},
		{"gateway cap below the per-user default", Limits{Capacity: host, MaxSessions: 5},
			Limits{Capacity: host, MaxSessions: 5, MaxSessionsPerUser: 5, WorkerStartRate: 2, WorkerStartBurst: 8}},
		{"per-user above the gateway's", Limits{Capacity: host, MaxSessions: 5, MaxSessionsPerUser: 9},
			Limits{Capacity: host, MaxSessions: 5, MaxSessionsPerUser: 5, WorkerStartRate: 2, WorkerStartBurst: 8}},
		{"per-user only lifted", Limits{Capacity: host, MaxSessionsPerUser: NoLimit},
			Limits{Capacity: host, MaxSessions: 128, MaxSessionsPerUser: 128, WorkerStartRate: 2, WorkerStartBurst: 8}},
		{"explicit", Limits{Capacity: host, MaxSessions: 50, MaxSessionsPerUser: 3, WorkerStartRate: 0.5, WorkerStartBurst: 2},
			Limits{Capacity: host, MaxSessions: 50, MaxSessionsPerUser: 3, WorkerStartRate: 0.5, WorkerStartBurst: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.in.withDefaults()); diff != "" {
				t.Errorf("withDefaults (-want +got):\n%s", diff)
			}
		})
	}
	if err := (Limits{WorkerStartBurst: -1}).Validate(); err == nil {
		t.Error("a negative burst is accepted")
	}
}

// TestTableReserve: the gateway's cap is reported before the user's; a released or removed
// slot is usable again; 0 is no cap.
func TestTableReserve(t *testing.T) {
	alice, bob := owner{"i", "alice"}, owner{"i", "bob"}
	type step struct {
		o    owner
		want error
	}
	tests := []struct {
		name          string
		max, maxOwner int
		steps         []step
	}{
		{"per user", 10, 2, []step{{alice, nil}, {alice, nil}, {alice, errUserFull}, {bob, nil}}},
		{"gateway", 2, 2, []step{{alice, nil}, {bob, nil}, {bob, errGatewayFull}, {alice, errGatewayFull}}},
		{"both reached: the gateway's", 2, 2, []step{{alice, nil}, {alice, nil}, {alice, errGatewayFull}}},
		{"no caps", 0, 0, []step{{alice, nil}, {alice, nil}, {alice, nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := newTable(tt.max, tt.maxOwner)
			for i, s := range tt.steps {
				if err := tb.reserve(s.o); !errors.Is(err, s.want) || (err == nil) != (s.want == nil) {
					t.Fatalf("step %d (%s): reserve = %v, want %v", i, s.o.subject, err, s.want)
				}
			}
		})
	}
	tb := newTable(1, 1)
	if err := tb.reserve(alice); err != nil {
		t.Fatal(err)
	}
	tb.release(alice)
	if err := tb.reserve(alice); err != nil {
		t.Errorf("a released slot is not free: %v", err)
	}
}

// TestStartRate: a user gets the burst at once, then one start per 1/rate; a refusal says
// how long to wait and costs nothing; users do not share a bucket; refilled buckets are
// forgotten, so the map holds only recently active users.
func TestStartRate(t *testing.T) {
	alice, bob := owner{"i", "alice"}, owner{"i", "bob"}
	s := newStartRate(2, 3) // 3 at once, then one per 500ms
	t0 := time.Unix(1000, 0)
	for i := range 3 {
		if ok, _ := s.take(alice, t0); !ok {
			t.Fatalf("start %d of the burst refused", i)
		}
	}
	ok, wait := s.take(alice, t0)
	if ok || wait != 500*time.Millisecond {
		t.Errorf("over the burst: ok %v, wait %v; want refused, 500ms", ok, wait)
	}
	if ok, wait := s.take(alice, t0.Add(100*time.Millisecond)); ok || wait != 400*time.Millisecond {
		t.Errorf("a refusal cost a start: ok %v, wait %v; want refused, 400ms", ok, wait)
	}
	if ok, _ := s.take(bob, t0); !ok {
		t.Error("bob is limited by alice's starts")
	}
	if ok, _ := s.take(alice, t0.Add(500*time.Millisecond)); !ok {
		t.Error("alice refused once a start had refilled")
	}
	if newStartRate(0, 3) != nil || newStartRate(NoLimit, 3) != nil {
		t.Error("a rate of 0 or less is not 'no limit'")
	}
	var none *startRate
	if ok, _ := none.take(alice, t0); !ok {
		t.Error("no limiter refused")
	}

	// Many users, each starting once: the map does not keep those whose bucket refilled.
	s = newStartRate(1, 1)
	for i := range 5 * minSweep {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond) // each user's bucket refills in 1s
		s.take(owner{"i", fmt.Sprint(i)}, at)
	}
	if n := s.size(); n > 2*minSweep {
		t.Errorf("%d buckets kept for %d users who started once each", n, 5*minSweep)
	}
}

// refusal checks an answer to initialize refused by a limit: status, Retry-After (and the
// same in the error's data), the request's own id, no session.
func refusal(t *testing.T, r reply, status int, id string) int {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || secs < 1 {
		t.Errorf("Retry-After %q, want whole seconds", r.header.Get("Retry-After"))
	}
	if r.header.Get(headerSessionID) != "" {
		t.Error("a refused initialize minted a session")
	}
	m := r.only(t)
	if string(m.ID) != id {
		t.Errorf("id %s, want the request's %s", m.ID, id)
	}
	e := rpcError(t, m)
	if data, _ := e.Data.(map[string]any); data["retryAfter"] != float64(secs) {
		t.Errorf("error data %v, want retryAfter %d", e.Data, secs)
	}
	return secs
}

// TestInitializeLimits: over the user's cap 429, over the gateway's 503, over the start rate
// 429 with the wait; each with Retry-After and the request's id.
func TestInitializeLimits(t *testing.T) {
	t.Run("per user", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.Limits = Limits{MaxSessions: 10, MaxSessionsPerUser: 1, WorkerStartRate: NoLimit} })
		f.client("alice-rw").open()
		refusal(t, f.client("alice-ro").rpc(`"a-2"`, "initialize", initParams("2025-06-18")), http.StatusTooManyRequests, `"a-2"`)
		f.client("bob-rw").open()
		if got := metricValue(t, f, "gemgate_sessions_opened_total", "result", "limit"); got != 1 {
			t.Errorf("sessions refused for a limit = %v, want 1", got)
		}
	})
	t.Run("gateway", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.Limits = Limits{MaxSessions: 1, WorkerStartRate: NoLimit} })
		f.client("alice-rw").open()
		refusal(t, f.client("bob-rw").rpc(`7`, "initialize", initParams("2025-06-18")), http.StatusServiceUnavailable, `7`)
	})
	t.Run("start rate", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.Limits = Limits{WorkerStartRate: 1.0 / 60, WorkerStartBurst: 1} })
		alice := f.client("alice-rw")
		alice.open()
		secs := refusal(t, f.client("alice-rw").rpc(`"r-2"`, "initialize", initParams("2025-06-18")), http.StatusTooManyRequests, `"r-2"`)
		if secs < 50 || secs > 60 {
			t.Errorf("Retry-After %d, want the minute until the next start", secs)
		}
		if got := metricValue(t, f, "gemgate_sessions_opened_total", "result", "rate"); got != 1 {
			t.Errorf("sessions refused for the rate = %v, want 1", got)
		}
		f.client("bob-rw").open() // bob has his own bucket, now spent
		// A malformed initialize is answered for what it is: it starts no worker, so the
		// rate is not consulted.
		if r := f.client("bob-rw").rpc(`1`, "initialize", nil); r.status != http.StatusOK || r.only(t).Error == nil {
			t.Errorf("malformed initialize: status %d, body %s", r.status, r.body)
		}
	})
	t.Run("shutting down", func(t *testing.T) {
		f := newFixture(t)
		f.gw.BeginShutdown()
		refusal(t, f.client("alice-rw").rpc(`"s-1"`, "initialize", initParams("2025-06-18")), http.StatusServiceUnavailable, `"s-1"`)
	})
}
