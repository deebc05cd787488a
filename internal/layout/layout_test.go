// Package layout holds two tests of the source tree: the package dependencies of DESIGN §1
// ("arrows go one way"), so that a new import across the layers fails here first, and the
// sizes of functions and packages (sizes_test.go).
package layout

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/gemgate/gemgate/"

// allowed lists, for every package of the binary, the gemgate packages it may import (its
// non-test files). cmd/gemgate wires everything and may import anything. Nothing below
// gateway imports auth: pool keys workers on an Identity of its own.
var allowed = map[string][]string{
	"internal/clip":                      {},
	"internal/jsontext":                  {},                // lone surrogate escapes (auth's claims, jsonrpc's decided strings)
	"internal/aside":                     {},                // deep work on a goroutine of its own (auth, gateway)
	"internal/private":                   {},                // files and folders no other account may change (dev state, GemStone relay)
	"internal/httperrorlog":              {"internal/clip"}, // the HTTP servers' ErrorLog, clipped and rate limited (cmd)
	"telemetry":                          {"internal/clip"}, // OpenTelemetry set-up and a request's spans (gateway, pool)
	"internal/userdir":                   {},                // the name of a user's folder of data_dir (worker, the demo worker)
	"jsonrpc":                            {"internal/clip", "internal/jsontext"},
	"auth":                               {"internal/clip", "internal/aside", "internal/jsontext"},
	"auth/devissuer":                     {},
	"auth/exchange":                      {"auth", "internal/clip"},
	"policy":                             {"jsonrpc"},
	"worker":                             {"jsonrpc", "internal/clip", "internal/private", "internal/userdir"},
	"worker/demo":                        {"internal/userdir"},
	"worker/gemstone":                    {"worker", "internal/clip", "internal/private"},
	"worker/gemstone/internal/fakestone": {},
	"pool":                               {"worker", "jsonrpc", "internal/clip", "telemetry"},
	"gateway":                            {"auth", "policy", "pool", "jsonrpc", "internal/clip", "internal/aside", "internal/jsontext", "gateway/wire", "gateway/trace", "gateway/metrics", "gateway/limit", "gateway/sessions", "gateway/sessionless", "telemetry"},
	"gateway/sessionless":                {"auth", "policy", "pool", "jsonrpc", "internal/clip", "internal/aside", "internal/jsontext", "gateway/wire", "telemetry"},
	"gateway/wire":                       {"jsonrpc"},
	"gateway/trace":                      {},
	"gateway/metrics":                    {"pool"},
	"gateway/limit":                      {},       // connection caps, capacity, start rate: nothing of ours
	"gateway/sessions":                   {"auth"}, // the table, lifetime and logger of sessions: never the core
	"cmd/gemgate":                        nil,      // anything
	"internal/layout":                    {},
	"internal/freeport":                  {}, // loopback ports for tests; no package of the binary imports it
	"internal/stacktest":                 {}, // stack measures for tests; likewise
}

func TestImportsFollowTheLayers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		// Not part of the binary: tests, benchmarks, deployment, and directories go ignores.
		if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" ||
			name == "node_modules" || rel == "test" || rel == "bench" || rel == "deploy") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		seen[rel] = true
		want, known := allowed[rel]
		if !known {
			t.Errorf("package %s is not in the layout table: add it to allowed with the layers it may import", rel)
			return nil
		}
		if want == nil {
			return nil
		}
		var bad []string
		for _, imp := range pkg.Imports {
			if dep, ok := strings.CutPrefix(imp, module); ok && !slices.Contains(want, dep) {
				bad = append(bad, dep)
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			t.Errorf("%s imports %v; its layer may import only %v (DESIGN §1)", rel, bad, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel := range allowed {
		if !seen[rel] {
			t.Errorf("the layout table names %s, which is not in the tree: a package moved, or the walk missed it", rel)
		}
	}
}
