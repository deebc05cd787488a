package test

import "testing"

// The TypeScript SDK client steps up within one session against a real Keycloak, as it does
// against the dev issuer (TestTypeScriptClientStepUp, ts-stepup.mjs): the CI client's service
// account asks first for mcp:use only (mcp:write is an optional scope of that client), gets a
// read-only session and a 403 on write_note; after the re-authorization for mcp:use
// mcp:write, write_note succeeds on the same session id.
func TestKeycloakTypeScriptClientStepUp(t *testing.T) {
	e := needKeycloak(t)
	needNodeModules(t)
	g := kcServe(t, e, kcServeAddr, nil)
	run := runNode(t, systemNode(t), "ts-stepup.mjs", []string{"GEMGATE_CLIENT_SECRET=" + e.CISecret},
		"--url", g.URL, "--issuer", e.Issuer, "--client-id", e.CIClient, "--user", "service-account-gemgate-ci")
	checkStepUpReport(t, g, run, "service-account-gemgate-ci")
}
