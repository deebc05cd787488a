package test

import (
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
)

// People log in through a real browser: Keycloak with the shipped realm
// (deploy/keycloak/realm-gemgate.json), `gemgate serve` configured as the compose demo, headless
// Chromium from Debian's chromium package driven by puppeteer-core (test/node/browser.mjs), and
// real clients (test/node/browser-login.mjs). Each page is saved as a screenshot; a failed run
// keeps them and logs where.

// The TypeScript SDK with an OAuth provider and no client id: dynamic registration, the login
// page, the consent page (whose write item does not promise what the realm's roles decide),
// the callback, tools; then alice steps up from a read-only session to read-write on the same
// session through the browser, the 403 saying how.
func TestBrowserSDKLoginAndStepUp(t *testing.T) {
	r := browserRun(t, "sdk", "alice")
	if got, _ := r.report["authorizations"].([]any); len(got) == 0 {
		t.Errorf("no authorization went to the browser: %v", r.report["authorizations"])
	}
	consent := browserConsent(r)
	if !strings.Contains(consent, "Use MCP tools through gemgate") || !strings.Contains(consent, "only if your account holds the mcp-writer role") {
		t.Errorf("alice's consent page listed %q; want the use item and the write item saying the role decides", consent)
	}
	reg, _ := r.report["registered"].(map[string]any)
	if scope, _ := reg["scope"].(string); !strings.Contains(scope, "mcp:write") {
		t.Errorf("the registered client's scope is %q: without mcp:write it could never step up", scope)
	}
	stepup, _ := r.report["stepup"].(map[string]any)
	msg, _ := stepup["message"].(string)
	for _, want := range []string{"a token with scope mcp:write may call it", "on this session too", "re-authorize"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the step-up's 403 said %q, want it to say %q", msg, want)
		}
	}
	if ch, _ := stepup["challenge"].(string); !strings.Contains(ch, `error="insufficient_scope"`) || !strings.Contains(ch, "mcp:write") {
		t.Errorf("the step-up's challenge %q, want insufficient_scope naming mcp:write", ch)
	}
	if same, _ := stepup["same_session"].(bool); !same {
		t.Error("the step-up did not keep the session")
	}
	if n := len(kcLogLines(r.gg, "session stepped up to read-write")); n != 1 {
		t.Errorf("gemgate logged %d step-ups, want 1", n)
	}
}

// bob logs in the same way, with a client whose callback is on the IPv6 loopback address,
// gets a read-only session, and write_note is refused with 403.
func TestBrowserSDKLoginReadOnly(t *testing.T) {
	r := browserRun(t, "sdk", "bob")
	if u, _ := r.report["redirect_uri"].(string); u != "http://[::1]:PORT/callback" {
		t.Errorf("bob's client used the callback %q, want the IPv6 loopback", u)
	}
	if consent := browserConsent(r); strings.Contains(consent, "Change things") && !strings.Contains(consent, "only if your account holds the mcp-writer role") {
		t.Errorf("bob's consent page promises the write scope: %q", consent)
	}
	write, _ := r.report["write"].(map[string]any)
	if msg, _ := write["message"].(string); !strings.Contains(msg, "re-authorize") {
		t.Errorf("bob's 403 said %q, want it to say what works", msg)
	}
}

// The MCP Inspector 2.x CLI with no client id registers itself and logs in through the
// browser it opens ($BROWSER).
func TestBrowserInspectorCLILogin(t *testing.T) {
	r := browserRun(t, "inspector", "alice")
	if w, _ := r.report["whoami"].(string); !strings.Contains(w, "read_only=false") {
		t.Errorf("the Inspector's whoami as alice: %q, want read-write", w)
	}
	if a, _ := r.report["authorization"].(map[string]any); a["client_id_is_uuid"] != true {
		t.Errorf("the Inspector did not use a dynamically registered client: %v", a)
	}
}

// VS Code's exact registration request is accepted, both its redirect ways reach the login
// page, and its loopback way ends in a session.
func TestBrowserVSCodeRegistration(t *testing.T) {
	r := browserRun(t, "vscode", "alice")
	reg, _ := r.report["registration"].(map[string]any)
	if s, _ := reg["scope"].(string); !strings.Contains(s, "mcp:write") || !strings.Contains(s, "mcp:use") {
		t.Errorf("VS Code's client was registered with scope %q; want mcp:use and mcp:write available", s)
	}
	if w, _ := r.report["whoami"].(string); !strings.Contains(w, "read_only=false") {
		t.Errorf("VS Code's whoami as alice: %q, want read-write", w)
	}
}

// A client identified by a Client ID Metadata Document logs in with no registration:
// Keycloak (started by .ci/keycloak.sh with its experimental `cimd` feature and trusting the
// run's test CA) fetches the document from a TLS server on loopback, shows the login and
// consent pages, and issues a token gemgate accepts. The realm file does not enable CIMD (a
// realm with the CIMD executor does not import into a Keycloak without the feature); this test
// adds the client profile and policy docs/clients.md describes through the admin API, and
// removes them after.
func TestBrowserCIMDLogin(t *testing.T) {
	t.Parallel()
	e := needKeycloak(t)
	tls := os.Getenv("KEYCLOAK_CIMD_TLS_DIR")
	if tls == "" {
		t.Fatal("KEYCLOAK_CIMD_TLS_DIR is not set: start Keycloak with .ci/keycloak.sh (it makes the CIMD test certificate) and eval its env")
	}
	kcEnableCIMD(t, e)
	for _, variant := range []struct {
		name  string
		extra []string
	}{{"own callback", nil}, {"portless loopback callbacks as Claude Code's document", []string{"--claude-like"}}} {
		t.Run(variant.name, func(t *testing.T) {
			r := browserRun(t, "cimd", "alice", append([]string{"--tls-dir", tls}, variant.extra...)...)
			if r.report["azp_is_document"] != true {
				t.Errorf("the token's azp is not the metadata document's URL")
			}
			if consent := browserConsent(r); !strings.Contains(consent, "Use MCP tools through gemgate") {
				t.Errorf("the CIMD client's consent page listed %q", consent)
			}
		})
	}
}

// kcEnableCIMD adds the Client ID Metadata Document profile and policy of docs/clients.md to
// the running realm, for loopback documents, until the test ends.
func kcEnableCIMD(t *testing.T, e kcEnv) {
	t.Helper()
	admin := newKCAdmin(t, e)
	var profiles, policies map[string]any
	admin.do(t, http.MethodGet, "/client-policies/profiles", nil, &profiles)
	admin.do(t, http.MethodGet, "/client-policies/policies", nil, &policies)
	domains := []string{"127.0.0.1", "localhost"}
	withProfile := map[string]any{"profiles": append(slices.Clone(anyList(profiles["profiles"])), map[string]any{"name": "cimd-test",
		"executors": []any{map[string]any{"executor": "client-id-metadata-document", "configuration": map[string]any{
			"cimd-allow-http-scheme": "false", "cimd-allow-permitted-domains": domains, "cimd-restrict-same-domain": "false"}}}})}
	withPolicy := map[string]any{"policies": append(slices.Clone(anyList(policies["policies"])), map[string]any{"name": "cimd-test", "enabled": true,
		"conditions": []any{map[string]any{"condition": "client-id-uri", "configuration": map[string]any{
			"client-id-uri-scheme": []string{"https"}, "client-id-uri-allow-permitted-domains": domains}}},
		"profiles": []string{"cimd-test"}})}
	admin.do(t, http.MethodPut, "/client-policies/profiles", withProfile, nil)
	admin.do(t, http.MethodPut, "/client-policies/policies", withPolicy, nil)
	t.Cleanup(func() {
		admin := newKCAdmin(t, e)
		admin.do(t, http.MethodPut, "/client-policies/policies", map[string]any{"policies": anyList(policies["policies"])}, nil)
		admin.do(t, http.MethodPut, "/client-policies/profiles", map[string]any{"profiles": anyList(profiles["profiles"])}, nil)
	})
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}

// browserResult is one run of browser-login.mjs and the gemgate it ran against.
type browserResult struct {
	nodeRun
	gg *gemgate
}

// browserRun starts gemgate as the compose demo configures it (demo worker, the
// preferred_username claim, profile as an extra scope, the Inspector's origins) in front of the
// suite's Keycloak, and runs one scenario of browser-login.mjs as user.
func browserRun(t *testing.T, scenario, user string, extra ...string) browserResult {
	t.Helper()
	t.Parallel()
	e := needKeycloak(t)
	needNodeModules(t)
	chromium := needChromium(t)
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
	shots, err := os.MkdirTemp("", "gemgate-browser-"+scenario+"-"+user+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screenshots of every page the browser showed: %s", shots)
			return
		}
		os.RemoveAll(shots)
	})
	run := runNodeFor(t, browserTimeout, node22(t), "browser-login.mjs", []string{"GEMGATE_USER_PASSWORD=" + user, "GEMGATE_CHROMIUM=" + chromium},
		append([]string{"--scenario", scenario, "--url", "http://" + addr + "/mcp", "--user", user, "--shots", shots}, extra...)...)
	checkNodeReport(t, g, run)
	return browserResult{nodeRun: run, gg: g}
}

// browserConsent is the text of the consent pages the user saw.
func browserConsent(r browserResult) string {
	var items []string
	pages, _ := r.report["pages"].([]any)
	for _, p := range pages {
		m, _ := p.(map[string]any)
		items = append(items, nodeStrings(m["consent"])...)
	}
	return strings.Join(items, " | ")
}
