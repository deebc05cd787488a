package test

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// confKnownGapsSession are the tolerated gaps of the per-session lane; its worker column is
// confSessionWorker, so that no line can be mistaken for one of TestConformance's.
const (
	confKnownGapsSession = "conformance/known-gaps-session.txt"
	confSessionWorker    = "sessionless-per-session"
	confSessionRevision  = "2025-11-25"
)

// TestConformancePerSession is TestConformance's 2025-11-25 lane with one worker per session
// (--worker-per session) instead of the default one per user: the go-sdk v1.8.0 everything-server
// over stdio behind gemgate, compared check by check with the same server in its own
// stateful HTTP mode. 2026-07-28 is not run here: that revision has no session to key a
// worker on. Gaps must be listed in test/conformance/known-gaps-session.txt.
func TestConformancePerSession(t *testing.T) {
	node, cli := confTool(t)
	b, err := os.ReadFile(confKnownGapsSession)
	if err != nil {
		t.Fatal(err)
	}
	known, err := confParseGaps(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", confKnownGapsSession, err)
	}
	for k := range known {
		if k.Requirements != confSessionRevision || k.Worker != confSessionWorker {
			t.Errorf("%s: %s names no run of this test: remove it", confKnownGapsSession, k)
		}
	}

	bin := filepath.Join(t.TempDir(), "sessionless-everything-server")
	if out, err := exec.Command("go", "build", "-o", bin, confEverythingPkg).CombinedOutput(); err != nil {
		t.Fatalf("building the go-sdk v1.8.0 everything-server: %v\n%s", err, out)
	}
	g := startDev(t, "--worker", "command", "--worker-command", bin, "--worker-per", "session",
		"--max-sessions-per-user", "0", "--worker-start-rate", "0")
	u, err := url.Parse(g.URL)
	if err != nil {
		t.Fatal(err)
	}
	token := g.Tokens["alice"]
	if token == "" {
		t.Fatal("gemgate dev gave no token for alice")
	}
	confNeedsToken(t, g.URL)
	gated := "http://" + confLocalhost(t, confTokenProxy(t, u, token)) + u.Path
	direct := "http://" + confLocalhost(t, confStartEverything(t, bin, false)) + "/mcp"

	artifacts := filepath.Join(t.TempDir(), "conformance-session")
	if dir := os.Getenv("GEMGATE_TEST_ARTIFACTS"); dir != "" {
		artifacts = filepath.Join(dir, "conformance-session") // not conformance/: TestConformance clears that
	}
	if err := os.RemoveAll(artifacts); err != nil {
		t.Fatal(err)
	}
	scenarios, err := confScenarios(node, cli, confSessionRevision)
	if err != nil {
		t.Fatal(err)
	}

	// The two runs at once, as TestConformance's lanes.
	runs := map[string]confSuiteRun{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, target := range map[string]string{"direct": direct, "gemgate-" + confSessionWorker: gated} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run, err := confRun(node, cli, confSessionRevision, target, filepath.Join(artifacts, name))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("%s %s: %v", confSessionRevision, name, err)
			}
			runs[name] = run
		}()
	}
	wg.Wait()
	confLogRun(t, confSessionRevision, "direct", runs["direct"])
	confLogRun(t, confSessionRevision, "gemgate-"+confSessionWorker, runs["gemgate-"+confSessionWorker])

	for _, s := range scenarios {
		if _, ok := runs["direct"].Scenarios[s]; !ok {
			t.Errorf("%s %s: no result from the direct run", confSessionRevision, s)
		}
	}
	r := confCheckGaps(confSessionRevision, confSessionWorker, confCompare(scenarios, runs["direct"], runs["gemgate-"+confSessionWorker]), known)
	confRecheck(t, node, cli, confSessionRevision, gated, filepath.Join(artifacts, "gemgate-"+confSessionWorker+"-again"), &r, runs["direct"])
	run := confSessionRevision + " gemgate-" + confSessionWorker
	confLog(t, fmt.Sprintf("conformance %s: %d known gap(s), %d new, %d closed, %d other difference(s), %d passed when run again alone", run, len(r.Known), len(r.New), len(r.Closed), len(r.NoGap), len(r.Passing)))
	confLogPassing(t, run, r)
	for _, d := range r.NoGap {
		t.Logf("%s: %s/%s is %s through gemgate, %s directly: no gap, as the reference does not pass it", run, d.Scenario, d.Check, confStatus(d.Gated), confStatus(d.Direct))
	}
	for _, d := range r.New {
		t.Errorf("%s: new gap, not in %s: %s", run, confKnownGapsSession, confGapLine(confSessionRevision, confSessionWorker, d))
	}
	for _, k := range r.Closed {
		t.Errorf("%s: %s is no gap any more: remove it from %s", run, k, confKnownGapsSession)
	}
	confNoToken(t, artifacts, token)
	if len(r.New) > 0 {
		t.Logf("gemgate log (last 100 lines):\n%s", confTail(g.logs.String(), 100))
	}
	// Per session, every scenario's session had a worker of its own: more than one was started.
	if n := len(g.logEvents("session opened")); n < 2 {
		t.Errorf("%d sessions opened through gemgate, want one per scenario", n)
	}
	t.Logf("per-scenario results in %s", artifacts)
}
