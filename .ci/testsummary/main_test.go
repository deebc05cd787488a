package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSummarizeEvents(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events string
		want   string   // the last line
		shows  []string // also in the output
		hides  []string // not in the output
	}{
		{
			name: "pass and skip with its reason",
			events: `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestKeycloak"}
{"Action":"output","Package":"p","Test":"TestKeycloak","Output":"=== RUN   TestKeycloak\n"}
{"Action":"output","Package":"p","Test":"TestKeycloak","Output":"    kc_test.go:12: no Keycloak: run .ci/test\n"}
{"Action":"output","Package":"p","Test":"TestKeycloak","Output":"--- SKIP: TestKeycloak (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestKeycloak"}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.01s\n"}
{"Action":"pass","Package":"p"}
`,
			want:  "1 passed, 0 failed, 1 skipped",
			shows: []string{"ok  \tp\t0.01s", "Skipped (1):", "p TestKeycloak: kc_test.go:12: no Keycloak: run .ci/test"},
			hides: []string{"=== RUN", "--- PASS"},
		},
		{
			name: "a failed test shows its output",
			events: `{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: want 1, got 2\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- FAIL: TestB (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}
{"Action":"fail","Package":"p"}
`,
			want:  "0 passed, 1 failed, 0 skipped",
			shows: []string{"b_test.go:3: want 1, got 2", "--- FAIL: TestB", "Failed (1):\n  p TestB"},
			hides: []string{"outside any test"},
		},
		{
			name: "a test cut off by a panic or timeout fails",
			events: `{"Action":"run","Package":"p","Test":"TestSlow"}
{"Action":"output","Package":"p","Test":"TestSlow","Output":"panic: test timed out after 1s\n"}
{"Action":"fail","Package":"p"}
`,
			want:  "0 passed, 1 failed, 0 skipped",
			shows: []string{"panic: test timed out", "no result: the test binary stopped while it ran"},
		},
		{
			name: "a build failure counts",
			events: `{"ImportPath":"q","Action":"build-output","Output":"# q\nq.go:1:1: syntax error\n"}
{"ImportPath":"q","Action":"build-fail"}
{"Action":"output","Package":"q","Output":"FAIL\tq [build failed]\n"}
{"Action":"fail","Package":"q"}
`,
			want:  "0 passed, 2 failed, 0 skipped", // the build, and the package that could not run
			shows: []string{"q.go:1:1: syntax error", "q (build failed)"},
		},
		{
			name: "the slowest top-level tests, slowest first, subtests left out",
			events: `{"Action":"run","Package":"p","Test":"TestQuick"}
{"Action":"pass","Package":"p","Test":"TestQuick","Elapsed":0.5}
{"Action":"run","Package":"p","Test":"TestSlow"}
{"Action":"run","Package":"p","Test":"TestSlow/sub"}
{"Action":"pass","Package":"p","Test":"TestSlow/sub","Elapsed":40}
{"Action":"pass","Package":"p","Test":"TestSlow","Elapsed":41.25}
{"Action":"run","Package":"q","Test":"TestBroken"}
{"Action":"fail","Package":"q","Test":"TestBroken","Elapsed":7}
{"Action":"fail","Package":"q"}
`,
			want:  "3 passed, 1 failed, 0 skipped",
			shows: []string{"Slowest tests (3):\n     41.2s p TestSlow\n      7.0s q TestBroken\n      0.5s p TestQuick\n"},
			hides: []string{"TestSlow/sub"},
		},
		{
			name:   "lines that are not events pass through",
			events: "go: downloading example.com/x v1.0.0\n",
			want:   "0 passed, 0 failed, 0 skipped",
			shows:  []string{"go: downloading example.com/x v1.0.0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if _, err := summarize(strings.NewReader(tc.events), &out); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if got := lines[len(lines)-1]; got != tc.want {
				t.Errorf("last line %q, want %q\n%s", got, tc.want, out.String())
			}
			for _, s := range tc.shows {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range tc.hides {
				if strings.Contains(out.String(), s) {
					t.Errorf("output has %q:\n%s", s, out.String())
				}
			}
		})
	}
}

// The real thing: go test -json of a small module with a passing, a failing, a skipped test
// and a skipped subtest.
func TestSummarizeRealGoTest(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"go.mod": "module example.com/s\n\ngo 1.26\n",
		"s_test.go": `package s

import "testing"

func TestPass(t *testing.T) {}
func TestFail(t *testing.T) { t.Error("broken on purpose") }
func TestSkip(t *testing.T) { t.Skip("needs Keycloak; run .ci/test") }
func TestParent(t *testing.T) {
	t.Run("child", func(t *testing.T) { t.Skipf("no %s here", "node") })
}
`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-json", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	raw, err := cmd.Output()
	if err == nil {
		t.Fatal("go test passed a package with a failing test")
	}
	var out bytes.Buffer
	res, err := summarize(bytes.NewReader(raw), &out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]skipped{
		{"example.com/s", "TestSkip", "s_test.go:7: needs Keycloak; run .ci/test"},
		{"example.com/s", "TestParent/child", "s_test.go:9: no node here"},
	}, res.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s\n%s", diff, out.String())
	}
	if !strings.HasSuffix(out.String(), "\n2 passed, 1 failed, 2 skipped\n") || !strings.Contains(out.String(), "broken on purpose") {
		t.Errorf("summary:\n%s", out.String())
	}
}
