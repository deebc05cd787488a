package layout

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Limits of a codebase a newcomer can read (issue 36): no function of the binary over 80
// lines, no package over 4,000, both counted as the issue counts production code (non-test
// files, without bench, test, .ci, the demo worker, the fake stone and the test helpers).
const (
	maxFunctionLines = 80
	maxPackageLines  = 4000
)

// notCounted are the folders whose code the count leaves out.
var notCounted = []string{"bench", "test", ".ci", "worker/demo", "worker/gemstone/internal/fakestone",
	"internal/stacktest", "internal/freeport"}

func TestFunctionsAndPackagesStaySmall(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			for _, skip := range notCounted {
				if rel == skip {
					return filepath.SkipDir
				}
			}
			if name := d.Name(); rel != "." && (name == "node_modules" || name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines[filepath.ToSlash(filepath.Dir(rel))] += bytes.Count(src, []byte("\n"))
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok {
				if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFunctionLines {
					t.Errorf("%s: %s is %d lines; split it (at most %d)", rel, fn.Name.Name, n, maxFunctionLines)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 10 {
		t.Fatalf("counted %d packages: the walk missed the tree", len(lines))
	}
	for pkg, n := range lines {
		if n > maxPackageLines {
			t.Errorf("package %s is %d lines; split it (at most %d)", pkg, n, maxPackageLines)
		}
	}
}
