package test

import (
	"os"
	"testing"
	"time"
)

// browserTimeout bounds one browser-login.mjs run: Chromium's start, a registration, one to
// three trips through Keycloak's pages and the MCP calls, on a busy 2-core machine.
const browserTimeout = 3 * time.Minute

// needChromium returns the Chromium to drive: $GEMGATE_TEST_CHROMIUM, else `chromium` on PATH
// (Debian's package). Without it the test skips, or fails when GEMGATE_TEST_REQUIRE_CHROMIUM=1
// says one is expected (CI installs the package).
func needChromium(t *testing.T) string {
	t.Helper()
	name := os.Getenv("GEMGATE_TEST_CHROMIUM")
	if name == "" {
		name = "chromium"
	}
	path := requireTool(t, name, "GEMGATE_TEST_REQUIRE_CHROMIUM")
	if _, err := os.Stat("node/node_modules/puppeteer-core/package.json"); err != nil {
		t.Fatal("test/node/node_modules lacks puppeteer-core; run `npm ci --prefix test/node`")
	}
	return path
}
