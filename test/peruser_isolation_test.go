package test

import (
	"slices"
	"testing"
	"time"
)

// TestPerUserWorkersSeparateUsersAndModes: through the real binary, alice read-write, alice
// read-only and bob (read-only) each get their own worker process, shared by each one's two
// sessions and by nobody else. The proof comes from three places that must agree: the
// process table (three children), gemgate's "session opened" lines (pid and worker id), and
// each worker's own whoami (user, worker id, read-only flag from its environment).
func TestPerUserWorkersSeparateUsersAndModes(t *testing.T) {
	t.Parallel()
	g := startDev(t)
	aliceRO := puToken(t, g, "alice", "mcp:use")
	type identity struct {
		name, token, user string
		readOnly          bool
	}
	ids := []identity{
		{"alice read-write", g.Tokens["alice"], "alice", false},
		{"alice read-only", aliceRO, "alice", true},
		{"bob", g.Tokens["bob"], "bob", true},
	}
	type seen struct {
		pid    int
		worker string
	}
	byIdentity := map[string]seen{}
	for _, id := range ids {
		for i := range 2 {
			cs := connect(t, g.URL, id.token, nil)
			pid, worker := puOpened(t, g, cs.ID())
			who := puWhoami(t, cs)
			if who.User != id.user || who.ReadOnly != id.readOnly || who.Worker != worker {
				t.Errorf("%s session %d: whoami %+v, want user %s read_only=%t on worker %s", id.name, i, who, id.user, id.readOnly, worker)
			}
			prev, ok := byIdentity[id.name]
			if !ok {
				byIdentity[id.name] = seen{pid, worker}
			} else if prev != (seen{pid, worker}) {
				t.Errorf("%s: its two sessions are on workers %v and %v, want one shared worker", id.name, prev, seen{pid, worker})
			}
		}
	}
	var pids []int
	workers := map[string]string{}
	for name, s := range byIdentity {
		if other, dup := workers[s.worker]; dup {
			t.Errorf("%s and %s share worker %s", name, other, s.worker)
		}
		workers[s.worker] = name
		if slices.Contains(pids, s.pid) {
			t.Errorf("%s shares worker process %d with another identity", name, s.pid)
		}
		pids = append(pids, s.pid)
	}
	g.waitWorkers(t, len(ids), 10*time.Second)
	children := childPIDs(g.cmd.Process.Pid)
	slices.Sort(children)
	slices.Sort(pids)
	if !slices.Equal(children, pids) {
		t.Errorf("worker processes %v, want exactly the logged %v", children, pids)
	}
}
