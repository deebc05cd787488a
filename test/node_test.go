package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// nodeDir holds the Node.js clients (test/node): the TypeScript MCP SDK and the MCP Inspector.
const nodeDir = "node"

// nodeScriptTimeout bounds one client script, start-up of Node included.
const nodeScriptTimeout = 2 * time.Minute

// needNodeModules skips the test when test/node has not been installed, or fails it when
// GEMGATE_TEST_REQUIRE_NODE=1 says the installation is expected (CI runs `npm ci` first).
func needNodeModules(t *testing.T) {
	t.Helper()
	for _, pkg := range []string{"@modelcontextprotocol/sdk", "@modelcontextprotocol/inspector", "node"} {
		if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", pkg, "package.json")); err != nil {
			msg := "test/node/node_modules lacks " + pkg + "; run `npm ci --prefix test/node`"
			if os.Getenv("GEMGATE_TEST_REQUIRE_NODE") == "1" {
				t.Fatal(msg + " (GEMGATE_TEST_REQUIRE_NODE=1)")
			}
			t.Skip(msg)
		}
	}
}

// node22 is the Node 22 binary of the `node` devDependency, which the Inspector requires.
func node22(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(nodeDir, "node_modules", "node", "bin", "node"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: the node package's install script did not run; run `npm ci --prefix test/node`", err)
	}
	return bin
}

// systemNode is the `node` on PATH (the TypeScript SDK supports it), else node22.
func systemNode(t *testing.T) string {
	t.Helper()
	if bin, err := exec.LookPath("node"); err == nil {
		return bin
	}
	return node22(t)
}

// nodeRun is what one client script did: its exit code, the JSON line it printed and stderr.
type nodeRun struct {
	exit   int
	report map[string]any
	stdout string
	stderr string
}

// runNode runs script from test/node with node and args; env adds to the environment (secrets
// go there, never on the command line).
func runNode(t *testing.T, node, script string, env []string, args ...string) nodeRun {
	t.Helper()
	return runNodeFor(t, nodeScriptTimeout, node, script, env, args...)
}

// runNodeFor is runNode with its own bound on the script's run.
func runNodeFor(t *testing.T, timeout time.Duration, node, script string, env []string, args ...string) nodeRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = nodeDir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	run := nodeRun{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		run.exit = exitErr.ExitCode()
	default:
		t.Fatalf("running %s: %v\nstderr:\n%s", script, err, run.stderr)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %v\nstdout:\n%s\nstderr:\n%s", script, timeout, run.stdout, run.stderr)
	}
	lines := strings.Split(strings.TrimSpace(run.stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &run.report); err != nil {
		t.Fatalf("%s exited %d without a JSON report: %v\nstdout:\n%s\nstderr:\n%s", script, run.exit, err, run.stdout, run.stderr)
	}
	return run
}

// checkNodeReport fails the test with the script's own failures and its full report when it did
// not succeed.
func checkNodeReport(t *testing.T, g *gemgate, run nodeRun) {
	t.Helper()
	if run.exit == 0 && run.report["ok"] == true {
		return
	}
	pretty, _ := json.MarshalIndent(run.report, "", "  ")
	t.Errorf("client exited %d; failures: %v\nreport:\n%s\nstderr:\n%s", run.exit, run.report["failures"], pretty, run.stderr)
	t.Logf("gemgate logs:\n%s", g.logs)
}

func nodeStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// runTSClient runs ts-client.mjs as the dev client id against g.
func runTSClient(t *testing.T, g *gemgate, id, mode, scope string) nodeRun {
	t.Helper()
	var secret string
	for _, c := range g.Clients {
		if c.ID == id {
			secret = c.Secret
		}
	}
	if secret == "" {
		t.Fatalf("gemgate dev printed no client %q", id)
	}
	return runNode(t, systemNode(t), "ts-client.mjs", []string{"GEMGATE_CLIENT_SECRET=" + secret},
		"--url", g.URL, "--issuer", g.Issuer, "--client-id", id, "--user", id, "--mode", mode, "--scope", scope)
}

// The TypeScript SDK client starts with no token, follows the 401 to the metadata and the dev
// issuer, gets a client_credentials token, and as alice writes and reads a note.
func TestTypeScriptClientAlice(t *testing.T) {
	t.Parallel()
	needNodeModules(t)
	g := startDev(t)
	run := runTSClient(t, g, "alice", "read-write", "mcp:use mcp:write")
	checkNodeReport(t, g, run)
	if got, want := nodeStrings(run.report["auth_flow"]), []string{"401", "resource-metadata", "issuer-metadata", "token", "initialize"}; !slices.Equal(got, want) {
		t.Errorf("auth flow = %v, want %v", got, want)
	}
	tools := nodeStrings(run.report["tools"])
	for _, want := range []string{"whoami", "echo", "read_note", "write_note", "delete_note"} {
		if !slices.Contains(tools, want) {
			t.Errorf("alice's tools/list lacks %s: %v", want, tools)
		}
	}
	if w, _ := run.report["whoami"].(string); !strings.Contains(w, "user=alice ") || !strings.Contains(w, "read_only=false") {
		t.Errorf("whoami = %q", w)
	}
}

// As bob (mcp:use only) the TypeScript SDK client gets a read-only session: no mutating tool is
// listed, and write_note called by name is refused with 403 insufficient_scope, which the SDK
// answers with one fruitless upscoping attempt and then an error.
func TestTypeScriptClientBob(t *testing.T) {
	t.Parallel()
	needNodeModules(t)
	g := startDev(t)
	run := runTSClient(t, g, "bob", "read-only", "mcp:use")
	checkNodeReport(t, g, run)
	tools := nodeStrings(run.report["tools"])
	for _, hidden := range []string{"write_note", "delete_note"} {
		if slices.Contains(tools, hidden) {
			t.Errorf("bob's tools/list shows %s: %v", hidden, tools)
		}
	}
	for _, want := range []string{"whoami", "read_note"} {
		if !slices.Contains(tools, want) {
			t.Errorf("bob's tools/list lacks %s: %v", want, tools)
		}
	}
	if w, _ := run.report["whoami"].(string); !strings.Contains(w, "user=bob ") || !strings.Contains(w, "read_only=true") {
		t.Errorf("whoami = %q", w)
	}
	refusal, _ := run.report["write_note_refusal"].(map[string]any)
	if refusal["http_403s"] != 2.0 || refusal["token_requests_for_upscoping"] != 1.0 {
		t.Errorf("write_note refusal = %v, want two 403s around one upscoping token request", refusal)
	}
	if errMsg, _ := run.report["write_note_error"].(map[string]any); errMsg["code"] != 403.0 {
		t.Errorf("write_note error = %v, want the SDK's 403", errMsg)
	}
}

// The MCP Inspector CLI lists tools and calls echo through gemgate with a bearer header, and
// without a token it is refused.
func TestInspectorCLI(t *testing.T) {
	t.Parallel()
	needNodeModules(t)
	node := node22(t)
	g := startDev(t)
	run := runNode(t, node, "inspector-cli.mjs", []string{"GEMGATE_TOKEN=" + g.Tokens["alice"]},
		"--url", g.URL, "--expect-tools", "whoami,echo,write_note")
	checkNodeReport(t, g, run)
	runs, _ := run.report["runs"].(map[string]any)
	echo, _ := runs["echo"].(map[string]any)
	if text, _ := echo["text"].(string); !strings.HasPrefix(text, "héllo from the Inspector CLI\n") {
		t.Errorf("echo through the Inspector = %q", text)
	}
	noToken, ok := runs["no_token"].(map[string]any)
	if exit, isNum := noToken["exit"].(float64); !ok || !isNum || exit == 0 {
		t.Errorf("the Inspector without a token: %v, want a run that exited non-zero", noToken)
	}
	if errObj, _ := noToken["error"].(map[string]any); errObj["code"] != "auth_required" {
		t.Errorf("the Inspector without a token failed with %v, want auth_required", noToken["error"])
	}
}
