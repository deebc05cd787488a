// Command testsummary reads `go test -json` on stdin and prints what a plain `go test` would
// (each package's result, the output of every failed test), then a summary that a green run
// cannot hide anything behind: every skipped test with its reason, the slowest tests (where
// CI's time goes), and a last line "N passed, M failed, K skipped". .ci/test pipes go test through it; the exit status stays
// go test's (this program fails only when its input cannot be read).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

func main() {
	if _, err := summarize(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string  // build-output and build-fail events
	Elapsed    float64 // seconds, on a test's pass or fail
}

// maxTestOutput bounds what is kept of one test's output until its result is known.
const maxTestOutput = 256 << 10

type skipped struct{ Package, Test, Reason string }

// result is what summarize counted.
type result struct {
	Passed, Failed int
	Skipped        []skipped
	FailedTests    []string // "package Test"
	FailedPackages []string // failed outside any test: build error, TestMain, panic, timeout
	Slowest        []timed  // the slowest top-level tests, slowest first
}

// timed is a top-level test and its wall time; a parallel test's includes its wait for a slot.
type timed struct {
	Name    string // "package Test"
	Elapsed float64
}

// slowestShown is how many of the slowest tests the summary lists.
const slowestShown = 12

// addTimed keeps the slowestShown slowest top-level tests in res.Slowest.
func (res *result) addTimed(e event) {
	if strings.Contains(e.Test, "/") {
		return
	}
	res.Slowest = append(res.Slowest, timed{e.Package + " " + e.Test, e.Elapsed})
	sort.SliceStable(res.Slowest, func(i, j int) bool { return res.Slowest[i].Elapsed > res.Slowest[j].Elapsed })
	if len(res.Slowest) > slowestShown {
		res.Slowest = res.Slowest[:slowestShown]
	}
}

type testOutput struct {
	b         strings.Builder
	truncated bool
}

func (o *testOutput) add(s string) {
	if o.b.Len()+len(s) > maxTestOutput {
		o.truncated = true
		return
	}
	o.b.WriteString(s)
}

func (o *testOutput) String() string {
	if o.truncated {
		return o.b.String() + fmt.Sprintf("    [output cut at %d KiB]\n", maxTestOutput>>10)
	}
	return o.b.String()
}

// summarize copies the essentials of the event stream r to w, then the summary.
func summarize(r io.Reader, w io.Writer) (result, error) {
	var res result
	running := map[[2]string]*testOutput{} // package, test -> output so far
	failedIn := map[string]bool{}          // packages with a failed test
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(w, sc.Text()) // not an event: pass it on as is
			continue
		}
		key := [2]string{e.Package, e.Test}
		switch {
		case e.Action == "build-output":
			io.WriteString(w, e.Output)
		case e.Action == "build-fail":
			res.FailedPackages = append(res.FailedPackages, e.ImportPath+" (build failed)")
		case e.Test == "" && e.Action == "output":
			if e.Output != "PASS\n" {
				io.WriteString(w, e.Output)
			}
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail"):
			// Tests still running when their package ends were cut off (a panic, a timeout).
			var cut []string
			for k := range running {
				if k[0] == e.Package {
					cut = append(cut, k[1])
				}
			}
			sort.Strings(cut)
			for _, name := range cut {
				k := [2]string{e.Package, name}
				io.WriteString(w, running[k].String())
				fmt.Fprintf(w, "--- FAIL: %s (no result: the test binary stopped while it ran)\n", name)
				res.Failed++
				res.FailedTests = append(res.FailedTests, e.Package+" "+name)
				failedIn[e.Package] = true
				delete(running, k)
			}
			if e.Action == "fail" && !failedIn[e.Package] {
				res.FailedPackages = append(res.FailedPackages, e.Package)
			}
		case e.Test == "":
		case e.Action == "run":
			running[key] = &testOutput{}
		case e.Action == "output":
			if o := running[key]; o != nil {
				o.add(e.Output)
			}
		case e.Action == "pass":
			res.Passed++
			res.addTimed(e)
			delete(running, key)
		case e.Action == "fail":
			res.Failed++
			res.addTimed(e)
			res.FailedTests = append(res.FailedTests, e.Package+" "+e.Test)
			failedIn[e.Package] = true
			if o := running[key]; o != nil {
				io.WriteString(w, o.String())
			}
			delete(running, key)
		case e.Action == "skip":
			reason := ""
			if o := running[key]; o != nil {
				reason = skipReason(o.b.String())
			}
			res.Skipped = append(res.Skipped, skipped{e.Package, e.Test, reason})
			delete(running, key)
		}
	}
	if err := sc.Err(); err != nil {
		return res, err
	}
	printSummary(w, res)
	return res, nil
}

// skipReason is a skipped test's own output: what it logged and passed to t.Skip, without
// the framing lines test2json adds.
func skipReason(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		lines = append(lines, t)
	}
	if len(lines) == 0 {
		return "(no reason given)"
	}
	return strings.Join(lines, " / ")
}

func printSummary(w io.Writer, res result) {
	fmt.Fprintln(w, "\n=== Test summary")
	if len(res.Skipped) > 0 {
		fmt.Fprintf(w, "Skipped (%d):\n", len(res.Skipped))
		for _, s := range res.Skipped {
			fmt.Fprintf(w, "  %s %s: %s\n", s.Package, s.Test, s.Reason)
		}
	}
	if len(res.Slowest) > 0 {
		fmt.Fprintf(w, "Slowest tests (%d):\n", len(res.Slowest))
		for _, s := range res.Slowest {
			fmt.Fprintf(w, "  %7.1fs %s\n", s.Elapsed, s.Name)
		}
	}
	if len(res.FailedTests) > 0 {
		fmt.Fprintf(w, "Failed (%d):\n", len(res.FailedTests))
		for _, f := range res.FailedTests {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	if len(res.FailedPackages) > 0 {
		fmt.Fprintf(w, "Packages that failed outside any test (%d), each counted as one failure:\n", len(res.FailedPackages))
		for _, p := range res.FailedPackages {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", res.Passed, res.Failed+len(res.FailedPackages), len(res.Skipped))
}
