package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
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
	// A client registered with only mcp:use cannot ask for mcp:write later: Keycloak 26.7 keeps
	// a registration's scope as the client's only optional scopes, and no registration policy,
	// client policy or workflow step of 26.7 adds one. docs/clients.md says so; when this
	// fails, Keycloak has changed and the docs (and perhaps the realm) must follow.
	narrow, _ := r.report["narrow"].(map[string]any)
	registered, _ := narrow["registered_scope"].(string)
	scopes := strings.Fields(registered)
	slices.Sort(scopes)
	if !slices.Equal(scopes, []string{"mcp:use", "profile"}) || narrow["error"] != "invalid_scope" || narrow["got_code"] != false {
		t.Errorf("a client registered with %v asked for mcp:write and got error=%v code=%v; want invalid_scope, as docs/clients.md says",
			narrow["registered_scope"], narrow["error"], narrow["got_code"])
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

// Anonymous registrations do not pile up to the realm's "Max Clients Limit" (every logout and
// login of Claude Code registers one more client): the realm's Keycloak workflow deletes every
// client created after the realm's import 30 days after its creation. 30 days cannot be waited
// for, so the test imports a copy of the shipped realm under another name with that delay cut to
// 3 s (nothing else changed; .ci/keycloak.sh has Keycloak run due workflow steps every 2 s),
// registers a client as Claude Code does, sees the deletion scheduled, and waits for the client
// to go. The realm's own clients are never scheduled. A realm of its own, so that no other test's
// client is deleted under it.
func TestKeycloakAnonymousRegistrationsExpire(t *testing.T) {
	t.Parallel()
	e := needKeycloak(t)
	if e.RealmFile == "" {
		t.Fatal("KEYCLOAK_REALM_FILE is not set; eval \"$(.ci/keycloak.sh env)\"")
	}
	raw, err := os.ReadFile(e.RealmFile)
	if err != nil {
		t.Fatal(err)
	}
	var realm map[string]any
	if err := json.Unmarshal(raw, &realm); err != nil {
		t.Fatal(err)
	}
	components, _ := realm["components"].(map[string]any)
	workflows := anyList(components["org.keycloak.models.workflow.WorkflowProvider"])
	if len(workflows) != 1 {
		t.Fatalf("the realm file holds %d workflows, want the one that expires registrations", len(workflows))
	}
	wf, _ := workflows[0].(map[string]any)
	cfg, _ := wf["config"].(map[string]any)
	if on, supports := anyList(cfg["on"]), anyList(cfg["supports"]); len(on) != 1 || on[0] != "client-created" || len(supports) != 1 || supports[0] != "CLIENTS" {
		t.Fatalf("the realm's workflow runs on %v for %v, want client-created for CLIENTS", on, supports)
	}
	subs, _ := wf["subComponents"].(map[string]any)
	steps := anyList(subs["org.keycloak.models.workflow.WorkflowStepProvider"])
	if len(steps) != 1 {
		t.Fatalf("the realm's workflow has %d steps, want one delete-client", len(steps))
	}
	step, _ := steps[0].(map[string]any)
	stepCfg, _ := step["config"].(map[string]any)
	if step["providerId"] != "delete-client" || fmt.Sprint(stepCfg["after"]) != "[30d]" {
		t.Fatalf("the realm's workflow steps are %v, want one delete-client after 30d (docs/clients.md says 30 days)", steps)
	}
	stepCfg["after"] = []string{"3s"}
	name := fmt.Sprintf("gemgate-expiry-%d", time.Now().UnixNano())
	realm["realm"] = name
	kcAdminAt(t, newKCAdmin(t, e), http.MethodPost, "", realm, nil)
	t.Cleanup(func() { kcAdminAt(t, newKCAdmin(t, e), http.MethodDelete, "/"+name, nil, nil) })
	admin := newKCAdmin(t, e) // afresh: an import can outlast an admin token (60 s)

	body := `{"client_name":"Claude Code (gemgate)","redirect_uris":["http://localhost:45123/callback"],"grant_types":["authorization_code","refresh_token"],` +
		`"response_types":["code"],"token_endpoint_auth_method":"none","scope":"mcp:use mcp:write profile offline_access"}`
	resp, err := http.Post(e.URL+"/realms/"+name+"/clients-registrations/openid-connect", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &reg) != nil || reg.ClientID == "" {
		t.Fatalf("anonymous registration answered %s: %s", resp.Status, b)
	}
	// A registered client's internal id is its client_id.
	var scheduled []struct {
		Name  string `json:"name"`
		Steps []struct {
			Uses   string `json:"uses"`
			Status string `json:"status"`
		} `json:"steps"`
	}
	// Keycloak schedules the workflow on the client-created event, which it may handle after
	// the registration has answered; on a busy machine the 3 s step may even have run already
	// (nothing but the workflow deletes a client here), which shows it was scheduled too.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		scheduled = nil
		kcAdminAt(t, admin, http.MethodGet, "/"+name+"/workflows/scheduled/"+reg.ClientID, nil, &scheduled)
		if len(scheduled) != 0 {
			if len(scheduled) != 1 || len(scheduled[0].Steps) != 1 || scheduled[0].Steps[0].Uses != "delete-client" {
				t.Fatalf("the registered client's scheduled workflows: %+v, want one delete-client", scheduled)
			}
			break
		}
		var found []any
		kcAdminAt(t, admin, http.MethodGet, "/"+name+"/clients?clientId="+reg.ClientID, nil, &found)
		if len(found) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the registered client has no scheduled workflow 15 s after its registration, want one delete-client")
		}
	}
	var own []struct {
		ID string `json:"id"`
	}
	kcAdminAt(t, admin, http.MethodGet, "/"+name+"/clients?clientId=mcp-client", nil, &own)
	if len(own) != 1 {
		t.Fatalf("mcp-client is not in the imported realm: %v", own)
	}
	var ownScheduled []any
	kcAdminAt(t, admin, http.MethodGet, "/"+name+"/workflows/scheduled/"+own[0].ID, nil, &ownScheduled)
	if len(ownScheduled) != 0 {
		t.Errorf("the realm's own client mcp-client is scheduled for deletion: %v", ownScheduled)
	}

	deadline := time.Now().Add(90 * time.Second)
	for {
		var found []any
		kcAdminAt(t, newKCAdmin(t, e), http.MethodGet, "/"+name+"/clients?clientId="+reg.ClientID, nil, &found)
		if len(found) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registered client %s still exists 90 s after a 3 s expiry (does Keycloak run due workflow steps often? KEYCLOAK_WORKFLOW_INTERVAL in .ci/keycloak.sh)", reg.ClientID)
		}
		time.Sleep(250 * time.Millisecond)
	}
	kcAdminAt(t, newKCAdmin(t, e), http.MethodGet, "/"+name+"/clients?clientId=mcp-client", nil, &own)
	if len(own) != 1 {
		t.Error("the workflow deleted the realm's own mcp-client too")
	}
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

// browserRun starts gemgate as the compose demo configures it (browserServeDemo) and runs one
// scenario of browser-login.mjs as user, its screenshots kept when the test fails
// (browserShots).
func browserRun(t *testing.T, scenario, user string, extra ...string) browserResult {
	t.Helper()
	t.Parallel()
	e := needKeycloak(t)
	needNodeModules(t)
	chromium := needChromium(t)
	g, url := browserServeDemo(t, e)
	shots := browserShots(t, strings.ReplaceAll(t.Name(), "/", "-")) // subtests run side by side
	run := runNodeFor(t, browserTimeout, node22(t), "browser-login.mjs", []string{"GEMGATE_USER_PASSWORD=" + user, "GEMGATE_TEST_CHROMIUM=" + chromium},
		append([]string{"--scenario", scenario, "--url", url, "--user", user, "--shots", shots}, extra...)...)
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
