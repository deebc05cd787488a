package test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// confDir holds the official MCP conformance suite and the Node 22 it needs (test/conformance).
const confDir = "conformance"

// confRequirement is one requirement set of the suite and how its reference runs: the
// go-sdk v1.8.0 everything-server in the HTTP mode that revision is served in.
type confRequirement struct {
	Revision  string
	Stateless bool // 2026-07-28 is sessionless; 2025-11-25's sampling, elicitation and GET stream need a session
}

var confRequirements = []confRequirement{{"2025-11-25", false}, {"2026-07-28", true}}

// confResult is one requirement set's runs: the reference directly and through gemgate
// with each worker, by worker name.
type confResult struct {
	Req       confRequirement
	Scenarios []string
	Direct    confSuiteRun
	Gated     map[string]confSuiteRun
	Gaps      map[string]confGapReport
}

// TestConformance runs the server scenarios of the official MCP conformance suite for both
// requirement sets (2025-11-25 and 2026-07-28): against the go-sdk everything-server in its
// own streamable HTTP mode (the reference), and through gemgate with two stdio workers, the
// same go-sdk v1.8.0 everything-server and a legacy-only one (see confWorkers). The suite cannot
// authenticate, so a small proxy in front of each gemgate adds alice's dev-issuer token and
// forwards Host and Origin as they came (the DNS-rebinding scenario depends on them).
//
// Check by check, every check that the reference passes must pass through gemgate, with both
// workers, in both sets, and none may fail through gemgate that does not fail directly,
// except the gaps listed in test/conformance/known-gaps.txt: those are reported, and one
// that closes must be removed from the list.
func TestConformance(t *testing.T) {
	node, cli := confTool(t)
	known := confLoadGaps(t)
	artifacts := confArtifacts(t)
	workers := confWorkers(t)
	sessionless := workers[0].Bin

	// The gemgates first, so that the runs below only wait on the suite.
	gated := make([]*confGated, len(workers))
	for i, w := range workers {
		gated[i] = confStartGated(t, w)
	}
	results := make([]*confResult, len(confRequirements))
	for i, req := range confRequirements {
		scenarios, err := confScenarios(node, cli, req.Revision)
		if err != nil {
			t.Fatal(err)
		}
		results[i] = &confResult{Req: req, Scenarios: scenarios, Gated: map[string]confSuiteRun{}, Gaps: map[string]confGapReport{}}
	}

	// Three lanes run at once: the reference, and gemgate with each worker. Within a lane the
	// requirement sets run one after the other, so that two runs never share a gemgate (and
	// its one worker for alice). On 2 cores this takes about as long as the slowest lane.
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	lane := func(name string, url func(confRequirement) string, keep func(*confResult, confSuiteRun)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, res := range results {
				out := filepath.Join(artifacts, res.Req.Revision, name)
				run, err := confRun(node, cli, res.Req.Revision, url(res.Req), out)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s %s: %w", res.Req.Revision, name, err))
				}
				keep(res, run)
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	stateful := "http://" + confLocalhost(t, confStartEverything(t, sessionless, false)) + "/mcp"
	stateless := "http://" + confLocalhost(t, confStartEverything(t, sessionless, true)) + "/mcp"
	lane("direct", func(r confRequirement) string {
		if r.Stateless {
			return stateless
		}
		return stateful
	}, func(res *confResult, run confSuiteRun) { res.Direct = run })
	for _, g := range gated {
		lane("gemgate-"+g.Worker.Name, func(confRequirement) string { return g.URL },
			func(res *confResult, run confSuiteRun) { res.Gated[g.Worker.Name] = run })
	}
	wg.Wait()
	wall := time.Since(start)
	for _, err := range errs {
		t.Error(err)
	}

	for _, res := range results {
		confLogRun(t, res.Req.Revision, "direct", res.Direct)
		for _, w := range workers {
			confLogRun(t, res.Req.Revision, "gemgate-"+w.Name, res.Gated[w.Name])
		}
	}
	confLog(t, fmt.Sprintf("conformance: %d runs in %s wall time", len(results)*(1+len(workers)), wall.Round(time.Millisecond)))

	for _, res := range results {
		for _, s := range res.Scenarios {
			if _, ok := res.Direct.Scenarios[s]; !ok {
				t.Errorf("%s %s: no result from the direct run", res.Req.Revision, s)
			}
		}
		for i, w := range workers {
			r := confCheckGaps(res.Req.Revision, w.Name, confCompare(res.Scenarios, res.Direct, res.Gated[w.Name]), known)
			confRecheck(t, node, cli, res.Req.Revision, gated[i].URL, filepath.Join(artifacts, res.Req.Revision, "gemgate-"+w.Name+"-again"), &r, res.Direct)
			res.Gaps[w.Name] = r
		}
	}
	confCheckKnownRuns(t, known, workers)
	confWriteSummary(t, artifacts, workers, results, wall)
	if os.Getenv("GEMGATE_TEST_CONFORMANCE_DOC") == "1" {
		confWriteDoc(t, filepath.Join("..", "docs", "conformance.md"), workers, results, wall)
	}

	failed := false
	for _, res := range results {
		for _, w := range workers {
			r := res.Gaps[w.Name]
			run := res.Req.Revision + " gemgate-" + w.Name
			confLog(t, fmt.Sprintf("conformance %s: %d known gap(s), %d new, %d closed, %d other difference(s), %d passed when run again alone", run, len(r.Known), len(r.New), len(r.Closed), len(r.NoGap), len(r.Passing)))
			confLogPassing(t, run, r)
			for _, d := range r.NoGap {
				t.Logf("%s: %s/%s is %s through gemgate, %s directly: no gap, as the reference does not pass it", run, d.Scenario, d.Check, confStatus(d.Gated), confStatus(d.Direct))
			}
			for _, d := range r.New {
				t.Errorf("%s: new gap, not in %s: %s", run, confKnownGaps, confGapLine(res.Req.Revision, w.Name, d))
				if d.Details != "" {
					t.Logf("%s: %s/%s through gemgate, in the first run, saw: %s", run, d.Scenario, d.Check, d.Details)
				}
				failed = true
			}
			for _, k := range r.Closed {
				t.Errorf("%s: %s is no gap any more: remove it from %s", run, k, confKnownGaps)
			}
		}
	}
	for _, g := range gated {
		confNoToken(t, artifacts, g.Token)
		if failed {
			t.Logf("gemgate log with the %s worker (last 100 lines):\n%s", g.Worker.Name, confTail(g.G.logs.String(), 100))
		}
	}
	t.Logf("per-scenario results in %s", artifacts)
}

// confRecheck runs each scenario in which r has a new gap a second time, alone, against
// mcpURL (its results under out), and holds r's new gaps against that run (confConfirm).
func confRecheck(t *testing.T, node, cli, requirements, mcpURL, out string, r *confGapReport, direct confSuiteRun) {
	t.Helper()
	again := map[string]*confScenario{}
	for _, d := range r.New {
		if _, done := again[d.Scenario]; done {
			continue
		}
		s, err := confRunScenario(node, cli, requirements, d.Scenario, mcpURL, filepath.Join(out, d.Scenario))
		if err != nil {
			t.Errorf("%s: second run of %s: %v", requirements, d.Scenario, err)
			continue
		}
		again[d.Scenario] = s
	}
	confConfirm(r, direct, again)
}

// confLogPassing logs the gaps of a run that did not show again on a second run.
func confLogPassing(t *testing.T, run string, r confGapReport) {
	t.Helper()
	for _, d := range r.Passing {
		first := ""
		if d.Message != "" {
			first = " (first run: " + d.Message + ")"
		}
		t.Logf("%s: %s/%s was %s through gemgate, %s directly, and passed when the scenario ran again alone: not counted%s",
			run, d.Scenario, d.Check, confStatus(d.Gated), confStatus(d.Direct), first)
	}
}

// confLogRun prints one run's closing line and time, in the test log and on stdout (CI
// reads the `N passed, M failed` form).
func confLogRun(t *testing.T, revision, name string, run confSuiteRun) {
	t.Helper()
	confLog(t, fmt.Sprintf("conformance %s %s: %s (exit %d, %s)", revision, name, run.Total, run.Exit, run.Took.Round(time.Millisecond)))
}

func confLog(t *testing.T, line string) {
	t.Helper()
	t.Log(line)
	fmt.Println(line)
}

// confLoadGaps reads test/conformance/known-gaps.txt.
func confLoadGaps(t *testing.T) map[confGapKey]string {
	t.Helper()
	b, err := os.ReadFile(confKnownGaps)
	if err != nil {
		t.Fatal(err)
	}
	known, err := confParseGaps(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", confKnownGaps, err)
	}
	return known
}

// confCheckKnownRuns fails on a known gap that names no run of this test, which would
// otherwise never be found closed.
func confCheckKnownRuns(t *testing.T, known map[confGapKey]string, workers []*confWorker) {
	t.Helper()
	for k := range known {
		okReq, okWorker := false, false
		for _, r := range confRequirements {
			okReq = okReq || r.Revision == k.Requirements
		}
		for _, w := range workers {
			okWorker = okWorker || w.Name == k.Worker
		}
		if !okReq || !okWorker {
			t.Errorf("%s: %s names no run of this test: remove it", confKnownGaps, k)
		}
	}
}

// confTool is the Node 22 binary and the suite's CLI script. It skips the test when
// test/conformance has not been installed, or fails it when GEMGATE_TEST_REQUIRE_NODE=1.
func confTool(t *testing.T) (node, cli string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join(confDir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(dir, "node", "bin", "node")
	cli = filepath.Join(dir, "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, f := range []string{node, cli} {
		if _, err := os.Stat(f); err != nil {
			msg := fmt.Sprintf("%s is missing; run `npm ci --prefix test/conformance`", f)
			if os.Getenv("GEMGATE_TEST_REQUIRE_NODE") == "1" {
				t.Fatal(msg + " (GEMGATE_TEST_REQUIRE_NODE=1)")
			}
			t.Skip(msg)
		}
	}
	return node, cli
}

// confArtifacts is where the per-scenario results go: $GEMGATE_TEST_ARTIFACTS/conformance when
// set (CI keeps it), else a temporary directory.
func confArtifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GEMGATE_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	dir, err := filepath.Abs(filepath.Join(dir, "conformance"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, r := range confRequirements {
		if err := os.MkdirAll(filepath.Join(dir, r.Revision), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// confNoToken checks that the token the proxy added appears nowhere in the artifacts.
func confNoToken(t *testing.T, dir, token string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte(token)) {
			t.Errorf("%s holds the bearer token", path)
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
}

// confTail is the last n lines of s.
func confTail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
