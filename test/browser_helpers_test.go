package test

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// browserTimeout bounds one browser-login.mjs run: Chromium's start, a registration, one to
// three trips through Keycloak's pages and the MCP calls, on a busy 2-core machine.
const browserTimeout = 3 * time.Minute

// needChromium skips the test when there is no Chromium to drive, or fails it when
// GEMGATE_REQUIRE_CHROMIUM=1 says one is expected (CI installs Debian's chromium package).
// GEMGATE_CHROMIUM names another binary; browser.mjs reads the same variable.
func needChromium(t *testing.T) {
	t.Helper()
	path := os.Getenv("GEMGATE_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err == nil {
		if _, err := os.Stat("node/node_modules/puppeteer-core/package.json"); err != nil {
			t.Fatal("test/node/node_modules lacks puppeteer-core; run `npm ci --prefix test/node`")
		}
		return
	}
	msg := "no Chromium at " + path + "; install Debian's chromium package (apt-get install chromium) or set GEMGATE_CHROMIUM"
	if os.Getenv("GEMGATE_REQUIRE_CHROMIUM") == "1" {
		t.Fatal(msg + " (GEMGATE_REQUIRE_CHROMIUM=1)")
	}
	t.Skip(msg)
}
