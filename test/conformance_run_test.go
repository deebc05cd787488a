package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// confSuiteTimeout bounds one run of a requirement set (a few seconds when all is well; a
// scenario that hangs is cut by the suite's own --timeout first).
const confSuiteTimeout = 10 * time.Minute

// confScenarioTimeout is the suite's per-scenario timeout. The reference answers every
// scenario in well under a second; its default of 30 s would let a run through gemgate
// that hangs in many scenarios take many minutes.
const confScenarioTimeout = 15 * time.Second

// confSuiteRun is one run of the suite: its exit code, its `Total:` line, its output and
// what each scenario gave.
type confSuiteRun struct {
	Exit      int
	Total     string
	Took      time.Duration `json:"-"`
	Output    string        `json:"-"`
	Scenarios map[string]*confScenario
}

// confScenario is one scenario's result: the counts from the suite's summary, whether the
// requirement set scores it (and why not), and the checks from its checks.json.
type confScenario struct {
	Passed   int
	Failed   int
	Unscored string `json:",omitempty"` // "pending", "extension", "added-after-release"
	Dir      string
	Checks   []confCheck
}

// confCheck is one check of checks.json.
type confCheck struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	Details      json.RawMessage `json:"details,omitempty"` // what the suite saw: logged with a new gap
}

// verdicts maps each check that carries a verdict to its status. INFO entries are the suite's
// trace of what went over the wire and are left out. A check id can occur several times in
// one scenario (one per case it tries); the k-th occurrence is keyed id#k from k = 2, which is
// stable because a scenario runs its cases in a fixed order.
func (s *confScenario) verdicts() (keys []string, status map[string]confCheck) {
	status = map[string]confCheck{}
	seen := map[string]int{}
	for _, c := range s.Checks {
		if c.Status == "INFO" {
			continue
		}
		seen[c.ID]++
		key := c.ID
		if n := seen[c.ID]; n > 1 {
			key = fmt.Sprintf("%s#%d", c.ID, n)
		}
		keys = append(keys, key)
		status[key] = c
	}
	return keys, status
}

// confCrashedCheck is the check id given to a scenario that the suite could not run.
const confCrashedCheck = "scenario-ran"

var (
	confRunningRE  = regexp.MustCompile(`^=== Running scenario: (\S+) ===`)
	confSavedRE    = regexp.MustCompile(`^Results saved to (.+)$`)
	confCrashedRE  = regexp.MustCompile(`^Failed to run scenario (\S+): (.*)$`)
	confSummaryRE  = regexp.MustCompile(`^[✓✗] (\S+): (\d+) passed, (\d+) failed`)
	confTotalRE    = regexp.MustCompile(`^Total: \d+ passed, \d+ failed`)
	confNotScored  = regexp.MustCompile(`^Not scored for `)
	confUnscoredRE = regexp.MustCompile(`^[✓✗] (\S+) \(([a-z-]+)\)$`)
)

// confRun runs the server scenarios of one requirement set (--requirements, e.g.
// 2025-11-25) against mcpURL, its results into out, and reads the summary and every
// scenario's checks.json. The suite's output goes to out.log. It returns an error rather
// than failing the test, so that runs can go in parallel.
func confRun(node, cli, requirements, mcpURL, out string) (confSuiteRun, error) {
	ctx, cancel := context.WithTimeout(context.Background(), confSuiteTimeout)
	defer cancel()
	work, err := os.MkdirTemp("", "gemgate-conformance-")
	if err != nil {
		return confSuiteRun{}, err
	}
	defer os.RemoveAll(work)
	cmd := exec.CommandContext(ctx, node, cli, "server", "--url", mcpURL, "--requirements", requirements,
		"--timeout", strconv.Itoa(int(confScenarioTimeout.Milliseconds())), "--output-dir", out)
	cmd.Dir = work
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	output, err := cmd.CombinedOutput()
	run := confSuiteRun{Took: time.Since(start), Output: string(output), Scenarios: map[string]*confScenario{}}
	if werr := os.WriteFile(out+".log", output, 0o644); werr != nil {
		return run, werr
	}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return run, fmt.Errorf("conformance server --url %s --requirements %s: not done within %s\n%s", mcpURL, requirements, confSuiteTimeout, output)
	case errors.As(err, &exit):
		run.Exit = exit.ExitCode()
	case err != nil:
		return run, fmt.Errorf("conformance server --url %s: %v\n%s", mcpURL, err, output)
	}

	dirs := map[string]string{}
	crashed := map[string]string{}
	var current string
	unscored := false
	sc := bufio.NewScanner(bytes.NewReader(output))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := confRunningRE.FindStringSubmatch(line); m != nil {
			current = m[1]
		} else if m := confSavedRE.FindStringSubmatch(line); m != nil && current != "" {
			dirs[current] = m[1]
		} else if m := confCrashedRE.FindStringSubmatch(line); m != nil {
			crashed[m[1]] = m[2]
		} else if m := confSummaryRE.FindStringSubmatch(line); m != nil {
			p, _ := strconv.Atoi(m[2])
			f, _ := strconv.Atoi(m[3])
			run.Scenarios[m[1]] = &confScenario{Passed: p, Failed: f}
		} else if confTotalRE.MatchString(line) {
			run.Total = line
		} else if confNotScored.MatchString(line) {
			unscored = true
		} else if m := confUnscoredRE.FindStringSubmatch(line); m != nil && unscored {
			if s := run.Scenarios[m[1]]; s != nil {
				s.Unscored = m[2]
			}
		}
	}
	if run.Total == "" {
		return run, fmt.Errorf("conformance server --url %s printed no Total line (exit %d):\n%s", mcpURL, run.Exit, output)
	}
	var errs []error
	for name, s := range run.Scenarios {
		dir, ok := dirs[name]
		if msg, stopped := crashed[name]; !ok && stopped {
			// The scenario threw before it saved any check (the suite counts it as one
			// failure): a check of its own, so that it is compared like the others.
			s.Checks = []confCheck{{ID: confCrashedCheck, Name: "ScenarioRan", Status: "FAILURE", ErrorMessage: msg}}
			continue
		}
		if !ok {
			errs = append(errs, fmt.Errorf("%s: the suite saved no results", name))
			continue
		}
		s.Dir, _ = filepath.Rel(filepath.Dir(out), dir)
		b, err := os.ReadFile(filepath.Join(dir, "checks.json"))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if err := json.Unmarshal(b, &s.Checks); err != nil {
			errs = append(errs, fmt.Errorf("%s: checks.json: %w", name, err))
		}
	}
	return run, errors.Join(errs...)
}

// confRunScenario runs one scenario of a requirement set alone against mcpURL, as confRun
// runs it within the set (--spec-version with --force is what --requirements does for each
// of its scenarios), its results into out, and reads its checks.
func confRunScenario(node, cli, requirements, scenario, mcpURL, out string) (*confScenario, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*confScenarioTimeout)
	defer cancel()
	work, err := os.MkdirTemp("", "gemgate-conformance-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	cmd := exec.CommandContext(ctx, node, cli, "server", "--url", mcpURL, "--scenario", scenario,
		"--spec-version", requirements, "--force",
		"--timeout", strconv.Itoa(int(confScenarioTimeout.Milliseconds())), "--output-dir", out)
	cmd.Dir = work
	cmd.WaitDelay = 5 * time.Second
	output, _ := cmd.CombinedOutput() // it exits 1 when a check fails: the checks say which
	if err := os.WriteFile(out+".log", output, 0o644); err != nil {
		return nil, err
	}
	var dir string
	for _, line := range strings.Split(string(output), "\n") {
		if m := confSavedRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			dir = m[1]
		}
	}
	if dir == "" {
		return nil, fmt.Errorf("conformance server --scenario %s --url %s saved no results:\n%s", scenario, mcpURL, output)
	}
	b, err := os.ReadFile(filepath.Join(dir, "checks.json"))
	if err != nil {
		return nil, err
	}
	s := &confScenario{}
	if err := json.Unmarshal(b, &s.Checks); err != nil {
		return nil, fmt.Errorf("%s: checks.json: %w", scenario, err)
	}
	return s, nil
}

// confListRE matches a scenario line of `conformance list`; the optional tag says which
// side a never-scored scenario is for.
var confListRE = regexp.MustCompile(`^\s*- (\S+)(?: \[(server|client)\])?$`)

// confScenarios asks the suite which server scenarios a requirement set runs (scored and
// never scored), so that a scenario missing from a run's summary is noticed.
func confScenarios(node, cli, requirements string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, cli, "list", "--server", "--requirements", requirements).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("conformance list --requirements %s: %v\n%s", requirements, err, out)
	}
	var names []string
	section := ""
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "Server scenarios"):
			section = "server"
		case strings.HasPrefix(line, "Client scenarios"):
			section = "client"
		case strings.HasPrefix(line, "Run and reported, but never scored"):
			section = "unscored"
		}
		m := confListRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if section == "server" || section == "unscored" && m[2] == "server" {
			names = append(names, m[1])
		}
	}
	if len(names) < 20 {
		return nil, fmt.Errorf("conformance list --requirements %s gave %d server scenarios:\n%s", requirements, len(names), out)
	}
	return names, nil
}
