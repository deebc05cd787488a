package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// confSuiteVersion is the installed suite's version, e.g. 0.2.0-alpha.12.
func confSuiteVersion() string {
	b, err := os.ReadFile(filepath.Join(confDir, "node_modules", "@modelcontextprotocol", "conformance", "package.json"))
	if err != nil {
		return "unknown"
	}
	var p struct{ Version string }
	if json.Unmarshal(b, &p) != nil || p.Version == "" {
		return "unknown"
	}
	return p.Version
}

// confWriteSummary writes summary.json (every run's counts and checks, and each worker's
// gaps) and summary.md (the per-scenario tables of docs/conformance.md) into the artifacts.
func confWriteSummary(t *testing.T, dir string, workers []*confWorker, results []*confResult, wall time.Duration) {
	t.Helper()
	type run struct {
		Requirements string
		Target       string
		Ms           int64
		Run          confSuiteRun
		Gaps         *confGapReport `json:",omitempty"`
	}
	summary := struct {
		Suite   string
		Workers []*confWorker
		WallMs  int64
		Runs    []run
	}{Suite: "@modelcontextprotocol/conformance@" + confSuiteVersion(), Workers: workers, WallMs: wall.Milliseconds()}
	for _, res := range results {
		summary.Runs = append(summary.Runs, run{res.Req.Revision, "direct", res.Direct.Took.Milliseconds(), res.Direct, nil})
		for _, w := range workers {
			g := res.Gaps[w.Name]
			summary.Runs = append(summary.Runs, run{res.Req.Revision, "gemgate-" + w.Name, res.Gated[w.Name].Took.Milliseconds(), res.Gated[w.Name], &g})
		}
	}
	b, err := json.MarshalIndent(summary, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	md := fmt.Sprintf("# Conformance summary\n\n@modelcontextprotocol/conformance %s, %d runs in %s wall time.\n\n",
		confSuiteVersion(), len(summary.Runs), wall.Round(time.Millisecond))
	if err := os.WriteFile(filepath.Join(dir, "summary.md"), []byte(md+confTables(workers, results)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// confTables is one Markdown table per requirement set: each scenario's passed/failed counts
// directly and through gemgate with each worker, and how many of gemgate's failures are
// known gaps.
func confTables(workers []*confWorker, results []*confResult) string {
	var b strings.Builder
	for _, res := range results {
		mode := "stateful"
		if res.Req.Stateless {
			mode = "stateless"
		}
		fmt.Fprintf(&b, "## `--requirements %s`\n\n", res.Req.Revision)
		fmt.Fprintf(&b, "Reference: the go-sdk v1.8.0 everything-server in its %s HTTP mode. Cells are the suite's passed/failed counts; \"gaps\" counts the checks that the reference passes and gemgate does not yet (test/conformance/known-gaps.txt).\n\n", mode)
		b.WriteString("| scenario | scored | direct |")
		for _, w := range workers {
			fmt.Fprintf(&b, " gemgate, %s worker |", w.Name)
		}
		b.WriteString("\n|---|---|---|")
		for range workers {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		gapsIn := func(w, s string) int {
			n := 0
			g := res.Gaps[w]
			for _, d := range append(append([]confDiff{}, g.Known...), g.New...) {
				if d.Scenario == s {
					n++
				}
			}
			return n
		}
		totals := make([][2]int, 1+len(workers))
		cell := func(s *confScenario, i, gaps int) string {
			if s == nil {
				if gaps > 0 {
					return fmt.Sprintf("no result (%s)", confGapCount(gaps))
				}
				return "no result"
			}
			totals[i][0] += s.Passed
			totals[i][1] += s.Failed
			c := fmt.Sprintf("%d/%d", s.Passed, s.Failed)
			if gaps > 0 {
				c += " (" + confGapCount(gaps) + ")"
			}
			return c
		}
		for _, s := range res.Scenarios {
			d := res.Direct.Scenarios[s]
			scored := "yes"
			if d != nil && d.Unscored != "" {
				scored = "no (" + d.Unscored + ")"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |", s, scored, cell(d, 0, 0))
			for i, w := range workers {
				fmt.Fprintf(&b, " %s |", cell(res.Gated[w.Name].Scenarios[s], i+1, gapsIn(w.Name, s)))
			}
			b.WriteString("\n")
		}
		b.WriteString("| **total** | |")
		for i := range totals {
			fmt.Fprintf(&b, " **%d/%d** |", totals[i][0], totals[i][1])
		}
		b.WriteString("\n\n")
		b.WriteString(confPassedLine(workers, res))
	}
	return b.String()
}

// confPassedLine says, for one requirement set, how many checks the reference passes and how
// many of those pass through gemgate with each worker (all but the gaps).
func confPassedLine(workers []*confWorker, res *confResult) string {
	ref := 0
	for _, s := range res.Direct.Scenarios {
		_, status := s.verdicts()
		for _, c := range status {
			if c.Status == "SUCCESS" {
				ref++
			}
		}
	}
	line := fmt.Sprintf("The reference passes %d checks; through gemgate", ref)
	for i, w := range workers {
		g := res.Gaps[w.Name]
		sep := ","
		if i == len(workers)-1 {
			sep = " and"
		}
		if i == 0 {
			sep = ""
		}
		line += fmt.Sprintf("%s %d of them pass with the %s worker", sep, ref-len(g.Known)-len(g.New), w.Name)
	}
	return line + ".\n\n"
}

// confWriteDoc writes docs/conformance.md from this run (GEMGATE_TEST_CONFORMANCE_DOC=1).
func confWriteDoc(t *testing.T, path string, workers []*confWorker, results []*confResult, wall time.Duration) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `# MCP conformance

gemgate is checked with the official MCP conformance suite,
[@modelcontextprotocol/conformance](https://www.npmjs.com/package/@modelcontextprotocol/conformance)
%s, by `+"`TestConformance`"+` (test/conformance_test.go; test/conformance/README.md says how
it works). For each requirement set the suite runs against the reference, the go-sdk v1.8.0
everything-server in its own HTTP mode, and through gemgate with each of two stdio workers:

`, confSuiteVersion())
	for _, w := range workers {
		fmt.Fprintf(&b, "- **%s**: %s\n", w.Name, w.About)
	}
	fmt.Fprintf(&b, `
Every check the reference passes must pass through gemgate, with both workers, except the
known gaps in test/conformance/known-gaps.txt (each with its reason); that list may only
shrink. A gap counts when it shows twice: its scenario runs a second time, alone, before the
test fails on it. Unscored scenarios (pending, extension, added after the revision's release) run
and are compared too. The tables below come from one run on %s (its six suite runs took
%s of wall time), made with:

`+"```sh"+`
npm ci --prefix test/conformance
GEMGATE_TEST_CONFORMANCE_DOC=1 GEMGATE_TEST_REQUIRE_NODE=1 go test -race -count=1 -run 'TestConformance$' -v ./test/
`+"```"+`

`, time.Now().UTC().Format("2006-01-02"), wall.Round(100*time.Millisecond))
	b.WriteString(confTables(workers, results))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func confGapCount(n int) string {
	if n == 1 {
		return "1 gap"
	}
	return fmt.Sprintf("%d gaps", n)
}
