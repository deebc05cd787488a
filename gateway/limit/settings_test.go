package limit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLimitsDefaults: zero means a default that is never unlimited; None lifts a cap; the
// per-user cap never exceeds the gateway's.
func TestLimitsDefaults(t *testing.T) {
	host := Capacity{OpenFiles: 65536, MemoryBytes: 8 * gib} // 128 sessions
	tests := []struct {
		name string
		in   Settings
		want Settings
	}{
		{"zero", Settings{Capacity: host}, Settings{Capacity: host, MaxSessions: 128, MaxSessionsPerUser: 16, WorkerStartRate: 2, WorkerStartBurst: 8}},
		{"lifted", Settings{Capacity: host, MaxSessions: None, MaxSessionsPerUser: None, WorkerStartRate: None},
			Settings{Capacity: host, WorkerStartBurst: 8}},
		{"gateway cap below the per-user default", Settings{Capacity: host, MaxSessions: 5},
			Settings{Capacity: host, MaxSessions: 5, MaxSessionsPerUser: 5, WorkerStartRate: 2, WorkerStartBurst: 8}},
		{"per-user above the gateway's", Settings{Capacity: host, MaxSessions: 5, MaxSessionsPerUser: 9},
			Settings{Capacity: host, MaxSessions: 5, MaxSessionsPerUser: 5, WorkerStartRate: 2, WorkerStartBurst: 8}},
		{"per-user only lifted", Settings{Capacity: host, MaxSessionsPerUser: None},
			Settings{Capacity: host, MaxSessions: 128, MaxSessionsPerUser: 128, WorkerStartRate: 2, WorkerStartBurst: 8}},
		{"explicit", Settings{Capacity: host, MaxSessions: 50, MaxSessionsPerUser: 3, WorkerStartRate: 0.5, WorkerStartBurst: 2},
			Settings{Capacity: host, MaxSessions: 50, MaxSessionsPerUser: 3, WorkerStartRate: 0.5, WorkerStartBurst: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.in.WithDefaults()); diff != "" {
				t.Errorf("WithDefaults (-want +got):\n%s", diff)
			}
		})
	}
	if err := (Settings{WorkerStartBurst: -1}).Validate(); err == nil {
		t.Error("a negative burst is accepted")
	}
}

// TestLimitsZeroIsValid: a zero burst is the default (8), not an error: a gateway configured
// with no limits at all starts. Only a negative burst is refused.
func TestLimitsZeroIsValid(t *testing.T) {
	if err := (Settings{}).Validate(); err != nil {
		t.Errorf("the zero Settings is refused: %v", err)
	}
}

// TestLimitsGatewayCapLiftedKeepsPerUserCap: lifting the gateway-wide cap does not lift the
// per-user one: one user still cannot take every worker the host can run.
func TestLimitsGatewayCapLiftedKeepsPerUserCap(t *testing.T) {
	host := Capacity{OpenFiles: 65536, MemoryBytes: 8 * gib}
	got := Settings{Capacity: host, MaxSessions: None}.WithDefaults()
	if got.MaxSessions != 0 || got.MaxSessionsPerUser != defaultMaxSessionsPerUser {
		t.Errorf("gateway cap lifted: MaxSessions %d, MaxSessionsPerUser %d; want 0 (none), %d",
			got.MaxSessions, got.MaxSessionsPerUser, defaultMaxSessionsPerUser)
	}
}

// TestLimitsDefaultCapIsTheHosts: with no Capacity given, the default gateway cap is the
// host's, whether or not the per-user cap is set: never the floor of an empty Capacity (1).
func TestLimitsDefaultCapIsTheHosts(t *testing.T) {
	want := HostCapacity().MaxSessions()
	if want <= 1 {
		t.Skipf("this host allows %d session: nothing to tell apart", want)
	}
	for _, in := range []Settings{{}, {MaxSessionsPerUser: 3}} {
		if got := in.WithDefaults().MaxSessions; got != want {
			t.Errorf("%+v: default MaxSessions %d, want the host's %d", in, got, want)
		}
	}
}
