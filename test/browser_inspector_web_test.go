package test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The MCP Inspector 2.x web UI, run as the real program (`mcp-inspector --web` from
// test/node's node_modules, on free loopback ports), logs in to gemgate as docs/clients.md
// says: headless Chromium opens the URL the Inspector prints, adds a server (transport
// streamable-http, gemgate's /mcp URL), connects; the Inspector registers itself with
// Keycloak and sends the tab to the login page; alice signs in and accepts the consent page;
// the tab comes back to the Inspector, the server shows "Connected", the tool list shows the
// demo tools, and whoami, run from the UI, says user=alice read_only=false
// (test/node/inspector-web.mjs). gemgate and Keycloak are set up as in the other browser tests.
func TestBrowserInspectorWebLogin(t *testing.T) {
	t.Parallel()
	e := needKeycloak(t)
	needNodeModules(t)
	chromium := needChromium(t)
	g, url := browserServeDemo(t, e)
	shots := browserShots(t, "inspector-web")
	run := runNodeFor(t, browserTimeout, node22(t), "inspector-web.mjs", []string{"GEMGATE_USER_PASSWORD=alice", "GEMGATE_TEST_CHROMIUM=" + chromium},
		"--url", url, "--user", "alice", "--shots", shots)
	checkNodeReport(t, g, run)
	if t.Failed() {
		return // the script's own failures say what the user saw
	}
	r := run.report

	if w, _ := r["whoami"].(string); !strings.HasPrefix(w, "user=alice ") || !strings.Contains(w, "read_only=false") {
		t.Errorf("the web UI showed whoami %q, want user=alice … read_only=false", w)
	}
	inspector, _ := r["inspector"].(map[string]any)
	origin, _ := inspector["origin"].(string)
	if inspector["has_api_token"] != true {
		t.Errorf("the URL the Inspector printed has no MCP_INSPECTOR_API_TOKEN: %v", inspector)
	}
	authz, _ := r["authorization"].(map[string]any)
	if authz["client_id_is_uuid"] != true {
		t.Errorf("the web UI did not use a dynamically registered client: %v", authz)
	}
	if cb, _ := authz["redirect_uri"].(string); origin == "" || cb != origin+"/oauth/callback" {
		t.Errorf("the web UI's callback is %q, want %s/oauth/callback", cb, origin)
	}
	if s, _ := authz["scope"].(string); !strings.Contains(s, "mcp:write") {
		t.Errorf("the web UI asked for scope %q, want mcp:write among them (from gemgate's challenge)", s)
	}
	var kinds []string
	var login, consentTitle, consent string
	for _, p := range anyList(r["pages"]) {
		m, _ := p.(map[string]any)
		kinds = append(kinds, nodeStrings(m["pages"])...)
		if s, _ := m["login_title"].(string); s != "" {
			login = s
		}
		if s, _ := m["consent_title"].(string); s != "" {
			consentTitle = s
		}
		consent = strings.Join(nodeStrings(m["consent"]), " | ")
	}
	if !slices.Equal(kinds, []string{"login", "consent", "callback"}) {
		t.Errorf("the tab went through %v, want Keycloak's login and consent pages and back", kinds)
	}
	if login != "Sign in to gemgate demo" || consentTitle != "Grant Access to MCP Inspector" || !strings.Contains(consent, "Use MCP tools through gemgate") {
		t.Errorf("the pages said %q, %q (%s); want the realm's login page and the consent page docs/clients.md describes", login, consentTitle, consent)
	}
	conn, _ := r["connected"].(map[string]any)
	status, _ := conn["status"].(map[string]any)
	if status["status"] != "Connected" || conn["header"] != "gemgate-demo" {
		t.Errorf("back in the web UI the server card says %v and the header %v, want Connected and gemgate-demo", status, conn["header"])
	}
	tools := nodeStrings(r["tools"])
	for _, want := range []string{"whoami", "echo", "write_note"} {
		if !slices.Contains(tools, want) {
			t.Errorf("the web UI's tool list %v lacks %s", tools, want)
		}
	}
	// gemgate saw the same: alice's read-write session ran whoami.
	var audited bool
	for _, l := range kcLogLines(g, `"msg":"audit tools/call"`) {
		var a struct {
			User, Tool, Outcome string
			ReadOnly            bool `json:"read_only"`
		}
		if json.Unmarshal([]byte(l), &a) == nil && a.User == "alice" && a.Tool == "whoami" && a.Outcome == "ok" && !a.ReadOnly {
			audited = true
		}
	}
	if !audited {
		t.Errorf("gemgate's audit log has no whoami call by alice on a read-write session:\n%s", strings.Join(kcLogLines(g, "audit"), "\n"))
	}
}

// browserServeDemo starts gemgate as the compose demo configures it (demo worker, the
// preferred_username claim, profile as an extra scope, the Inspector's origins) in front of the
// suite's Keycloak, and returns it with its MCP URL.
func browserServeDemo(t *testing.T, e kcEnv) (*gemgate, string) {
	t.Helper()
	addr := freeAddr(t)
	g := launch(t, launchOpts{Args: []string{"serve", "--drain-delay", "0s", "--listen", addr, "--allow-insecure-http",
		"--public-url", "http://" + addr + "/mcp", "--issuer", e.Issuer, "--audiences", e.DemoAudience,
		"--user-claim", "preferred_username", "--extra-scopes", "profile",
		"--allowed-origins", "http://localhost:6274,http://127.0.0.1:6274", "--worker", "demo",
		"--data-dir", t.TempDir(), "--metrics-listen", "off", "--log-format", "json", "--log-level", "info"},
		Poll: func(*gemgate) bool {
			resp, err := http.Get("http://" + addr + "/healthz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}})
	return g, "http://" + addr + "/mcp"
}

// browserShots is the folder for a browser test's screenshots: $GEMGATE_TEST_ARTIFACTS/browser-<name>
// when set (CI keeps it), else a temporary folder. A failing test keeps them and logs where; a
// passing one removes them.
func browserShots(t *testing.T, name string) string {
	t.Helper()
	var dir string
	if a := os.Getenv("GEMGATE_TEST_ARTIFACTS"); a != "" {
		abs, err := filepath.Abs(filepath.Join(a, "browser-"+name))
		if err != nil {
			t.Fatal(err)
		}
		dir = abs
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	} else {
		tmp, err := os.MkdirTemp("", "gemgate-browser-"+name+"-")
		if err != nil {
			t.Fatal(err)
		}
		dir = tmp
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screenshots of every page the browser showed: %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}
