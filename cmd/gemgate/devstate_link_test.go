package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// With no home directory the dev data directory is the predictable /tmp/gemgate-demo-<uid>,
// which another account can put first as a link to a folder of its choice. The issuer's state
// is then neither made nor kept through that link: nothing is created where it leads.
func TestDevStateIsNotMadeThroughAnotherAccountsLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a link to another account needs root; CI runs as root")
	}
	tmp, err := os.MkdirTemp("", "gemgate-devstate-") // in /tmp: root's, sticky
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(tmp, "root-folder")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(tmp, "gemgate-demo-0")
	if err := os.Symlink(target, dataDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(dataDir, 54321, 54321); err != nil { // planted by another account
		t.Fatal(err)
	}
	if _, err := loadDevState(devStatePaths(dataDir)); err == nil {
		t.Errorf("loadDevState through a link of uid 54321 succeeded")
	}
	if _, err := os.Lstat(filepath.Join(target, devStateDir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s was made where another account's link led: %v", filepath.Join(target, devStateDir), err)
	}

	// gemgate's own data directory, not yet made, is made as before.
	own := filepath.Join(tmp, "own", "data")
	if _, err := loadDevState(devStatePaths(own)); err != nil {
		t.Fatalf("a data directory of gemgate's own: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(own, devStateDir)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v, want a folder of mode 0700", filepath.Join(own, devStateDir), err)
	}
}
