package pool

import (
	"strings"
	"testing"
)

// TestSessionlessRefused: a pool of sessions only (GemStone) refuses sessionless requests with
// its reason whatever worker_per says; per session, every worker is a session's; otherwise a
// sessionless request has the user's worker.
func TestSessionlessRefused(t *testing.T) {
	for _, tc := range []struct {
		s    Settings
		want string
	}{
		{Settings{WorkerPer: PerUser, SessionsOnly: "sessions only"}, "sessions only"},
		{Settings{WorkerPer: PerSession, SessionsOnly: "sessions only"}, "sessions only"},
		{Settings{WorkerPer: PerSession}, "worker_per: session"},
		{Settings{WorkerPer: PerUser}, ""},
	} {
		p, err := New(Options{Settings: tc.s, Launcher: scriptLauncher{}})
		if err != nil {
			t.Fatal(err)
		}
		got := p.SessionlessRefused()
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
		p.Close()
	}
}
