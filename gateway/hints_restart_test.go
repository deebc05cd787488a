package gateway

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gemgate/gemgate/policy"
	"github.com/gemgate/gemgate/pool"
)

// The worker mode regenerated (GEMGATE_TEST_WORKER=regenerated) is a legacy worker whose tool
// flip is annotated readOnlyHint: true by the first of its processes only (the first to find
// no mark in GEMGATE_DATA_DIR): a later one, started after the first died, lists flip without
// annotations, as a worker program upgraded on disk (a worker_command of npx -y fetches the
// newest) may do. Its tool die exits the process.
func init() {
	if os.Getenv("GEMGATE_TEST_WORKER") == "regenerated" {
		os.Exit(playRegenerated())
	}
}

func playRegenerated() int {
	mark := filepath.Join(os.Getenv("GEMGATE_DATA_DIR"), "regenerated-started")
	_, err := os.Stat(mark)
	first := os.IsNotExist(err)
	if first {
		_ = os.WriteFile(mark, nil, 0o600)
	}
	w := &scripted{name: "regenerated", caps: `{"tools":{}}`}
	w.handle = func(w *scripted, m *scriptedMsg) bool {
		switch {
		case m.Method == "tools/list":
			annotations := ""
			if first {
				annotations = `,"annotations":{"readOnlyHint":true}`
			}
			w.out(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"flip","inputSchema":{"type":"object"}%s},`+
				`{"name":"die","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}}`, m.ID, annotations)
		case m.Method == "tools/call" && m.Params.Name == "die":
			os.Exit(0)
		case m.Method == "tools/call":
			w.text(m.ID, "done")
		default:
			return false
		}
		return true
	}
	return w.run()
}

// A session outlives its worker (on_worker_exit: keep): the next request starts a fresh worker
// process, which may list its tools otherwise. What the session's tool gate learnt of the tools
// from the dead worker's tools/list does not decide for the fresh one: a tool the dead worker
// hinted read-only, and the fresh one does not, is refused to a read-only token (as it is to a
// 2026-07-28 request, and to a session that never listed the tools), not let through on the
// dead worker's word.
func TestToolHintsOfADeadWorkerDoNotDecide(t *testing.T) {
	pol, err := policy.New(policy.Config{TrustReadOnlyHints: true})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *Options) {
		o.Policy = pol
		o.Workers = &testLauncher{mode: "regenerated", dataDir: t.TempDir()}
		o.Pool = pool.Settings{WorkerPer: pool.PerUser, OnWorkerExit: pool.ExitKeep}
	})
	c := f.client("alice-ro")
	c.open()
	if got := listedTools(t, c.rpc("2", "tools/list", map[string]any{})); !slices.Equal(got, []string{"die", "flip"}) {
		t.Fatalf("first worker's tools/list: %v, want die and flip (hinted read-only)", got)
	}
	first := c.sessionObj().member.WorkerID()
	if r := c.callTool("3", "die", map[string]any{}); r.only(t).Error == nil {
		t.Fatalf("die: %d %s, want the worker's exit", r.status, r.body)
	}
	forbiddenBody(t, c.callTool("4", "flip", map[string]any{}), "4", "readOnly")
	if now := c.sessionObj().member.WorkerID(); now == first || now == "" {
		t.Fatalf("worker %q after the first (%q) died: want a fresh one", now, first)
	}
	if got := listedTools(t, c.rpc("5", "tools/list", map[string]any{})); !slices.Equal(got, []string{"die"}) {
		t.Errorf("fresh worker's tools/list: %v, want flip hidden (not hinted read-only)", got)
	}
	// The fresh worker's first list is learnt: the call that asked it was made at that worker.
	if h := c.sessionObj().hint("die"); h == nil {
		t.Errorf("after the fresh worker's tools/list the session holds no hints of its tools")
	}
}
