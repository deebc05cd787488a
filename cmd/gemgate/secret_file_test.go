package main

import (
	"os"
	"strings"
	"testing"
)

// A secret on the command line is refused because every account can read it; a config file
// that holds exchange_client_secret and that other accounts may read exposes it as much.
// gemgate check and the start log warn about it (a mode such as 0644, a checkout's or an
// editor's default), naming the file and the fix; a file only its owner reads passes, and so
// does one its group may read (root:gemgate 0640, read by gemgate's account through its group).
func TestSecretInAConfigFileOthersCanReadIsWarned(t *testing.T) {
	for _, tc := range []struct {
		mode os.FileMode
		warn bool
	}{{0o644, true}, {0o604, true}, {0o640, false}, {0o600, false}} {
		file := writeFile(t, "gemgate.yaml", "exchange_client_secret: s3cret-of-the-client\n")
		if err := os.Chmod(file, tc.mode); err != nil {
			t.Fatal(err)
		}
		c, err := load("serve", []string{"--config", file})
		if err != nil {
			t.Fatal(err)
		}
		var found *warning
		for _, w := range c.warnings() {
			if strings.Contains(w.what, file) {
				found = &w
			}
			if strings.Contains(w.what+w.fix, "s3cret") {
				t.Errorf("a warning quotes the secret: %+v", w)
			}
		}
		if (found != nil) != tc.warn {
			t.Errorf("mode %o: warned %v, want %v", tc.mode, found, tc.warn)
		}
		if found != nil && (!strings.Contains(found.what, "exchange_client_secret") || !strings.Contains(found.fix, "GEMGATE_EXCHANGE_CLIENT_SECRET")) {
			t.Errorf("mode %o: the warning names neither the setting nor the environment: %+v", tc.mode, *found)
		}
	}
}
