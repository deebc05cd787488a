package test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"
)

// presetServers say how to start the real server of each preset in policy/presets: the npm
// servers from test/presets (npm ci --prefix test/presets), the PyPI ones from a virtualenv
// under $GEMGATE_CACHE/presets-py (pip install -r test/presets/requirements.txt). {dir} is a
// fresh directory. The GitHub server is published on neither npm nor the Go module proxy
// reachable here, so its preset is checked only for its form (TestPresetsForm).
var presetServers = map[string][]string{
	"filesystem": {"node:mcp-server-filesystem", "{dir}"},
	"memory":     {"node:mcp-server-memory"},
	"everything": {"node:mcp-server-everything"},
	"git":        {"py:mcp-server-git", "--repository", "{dir}"},
	"fetch":      {"py:mcp-server-fetch"},
}

// presetFile is what a preset holds.
type presetFile struct {
	ReadOnlyTools []string `yaml:"read_only_tools"`
}

func readPreset(t *testing.T, name string) ([]string, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "policy", "presets", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var p presetFile
	if err := yaml.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s.yaml: %v", name, err)
	}
	return p.ReadOnlyTools, string(b)
}

// Every preset names its source (the server's docs or code at a version) and lists tools,
// no glob among them: a glob would vouch for tools a later version adds.
func TestPresetsForm(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"filesystem", "memory", "everything", "git", "fetch", "github", "gemstone"} {
		tools, text := readPreset(t, name)
		if len(tools) == 0 || !strings.Contains(text, "# Source:") && name != "gemstone" {
			t.Errorf("%s.yaml: %d tools, source named: %v", name, len(tools), strings.Contains(text, "# Source:"))
		}
		for _, tool := range tools {
			if strings.ContainsAny(tool, `*?[\`) {
				t.Errorf("%s.yaml: %q is a glob", name, tool)
			}
		}
	}
}

// presetServerCommand is the command line of a preset's server, or "" and why not.
func presetServerCommand(t *testing.T, args []string) ([]string, string) {
	cache := os.Getenv("GEMGATE_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "gemgate")
	}
	kind, bin, _ := strings.Cut(args[0], ":")
	path := filepath.Join("presets", "node_modules", ".bin", bin)
	if kind == "py" {
		path = filepath.Join(cache, "presets-py", "bin", bin)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, path + " is not installed (npm ci --prefix test/presets; python3 -m venv " +
			filepath.Join(cache, "presets-py") + " && its pip install -r test/presets/requirements.txt)"
	}
	dir := t.TempDir()
	out := []string{path}
	for _, a := range args[1:] {
		out = append(out, strings.ReplaceAll(a, "{dir}", dir))
	}
	return out, ""
}

// Each preset against its real server: every tool the preset vouches for exists, and the
// server declares it read-only (readOnlyHint) wherever it declares annotations at all.
func TestPresetsAgainstRealServers(t *testing.T) {
	for name, args := range presetServers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			argv, missing := presetServerCommand(t, args)
			if missing != "" {
				if os.Getenv("GEMGATE_TEST_REQUIRE_PRESETS") == "1" {
					t.Fatal(missing + " (GEMGATE_TEST_REQUIRE_PRESETS=1)")
				}
				t.Skip(missing + "; .ci/run installs it (set GEMGATE_TEST_REQUIRE_PRESETS=1 to make this a failure)")
			}
			if len(argv) > 2 && argv[1] == "--repository" {
				if out, err := exec.Command("git", "init", "-q", argv[2]).CombinedOutput(); err != nil {
					t.Fatalf("git init: %v %s", err, out)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), "MEMORY_FILE_PATH="+filepath.Join(t.TempDir(), "memory.jsonl"))
			client := mcp.NewClient(&mcp.Implementation{Name: "gemgate-presets", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("start %v: %v", argv, err)
			}
			defer cs.Close()
			served := map[string]*mcp.ToolAnnotations{}
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatalf("tools/list: %v", err)
				}
				served[tool.Name] = tool.Annotations
				t.Logf("served %-36s annotations %+v", tool.Name, tool.Annotations)
			}
			vouched, _ := readPreset(t, name)
			for _, tool := range vouched {
				a, ok := served[tool]
				switch {
				case !ok:
					t.Errorf("%s.yaml vouches for %q, which the server does not have", name, tool)
				case a != nil && !a.ReadOnlyHint:
					t.Errorf("%s.yaml vouches for %q, which the server does not declare read-only: %+v", name, tool, a)
				}
			}
			for tool, a := range served {
				if a != nil && a.ReadOnlyHint && !slices.Contains(vouched, tool) {
					t.Logf("%s declares %q read-only; %s.yaml leaves it out", name, tool, name)
				}
			}
		})
	}
}
