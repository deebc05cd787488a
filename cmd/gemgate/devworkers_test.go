package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gemgate/gemgate/worker"
)

// The folders above the workers' folder: root's, closed to other writers unless sticky, open
// to nobody's search; a link among them is resolved, and the folder made is nobody's alone.
func TestOwnedDirChecksTheFoldersAbove(t *testing.T) {
	nobody := nobodyAsRoot(t)
	for _, tc := range []struct {
		name, want string
		set        func(parent string) error
	}{
		{"root's, 0755", "", func(p string) error { return os.Chmod(p, 0o755) }},
		{"root's, 1777 as /tmp", "", func(p string) error { return os.Chmod(p, 0o777|os.ModeSticky) }},
		// Others could swap a link in for the folder between its mkdir and its chown.
		{"root's, 0777 without sticky bit", "may be written by others", func(p string) error { return os.Chmod(p, 0o777) }},
		{"root's, 0775 for another group, without sticky bit", "may be written by group 54321", func(p string) error {
			if err := os.Chmod(p, 0o775); err != nil {
				return err
			}
			return os.Chown(p, 0, 54321)
		}},
		{"another account's", "belongs to uid 54321", func(p string) error {
			if err := os.Chmod(p, 0o755); err != nil {
				return err
			}
			return os.Chown(p, 54321, 54321)
		}},
		{"root's, 0700", "cannot be entered by nobody", func(p string) error { return os.Chmod(p, 0o700) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top, err := os.MkdirTemp("", "gemgate-owneddir-") // in /tmp, which nobody may enter
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(top) })
			if err := os.Chmod(top, 0o755); err != nil {
				t.Fatal(err)
			}
			parent := filepath.Join(top, "tmp")
			if err := os.Mkdir(parent, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := tc.set(parent); err != nil {
				t.Fatal(err)
			}
			// The parent is named through a link, which ownedDir resolves.
			link := filepath.Join(top, "link")
			if err := os.Symlink(parent, link); err != nil {
				t.Fatal(err)
			}
			dir, err := ownedDir(filepath.Join(link, devWorkersDirName), nobody)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("ownedDir under a parent %s: %v, want an error naming %q", tc.name, err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(parent, devWorkersDirName); dir != want {
				t.Errorf("ownedDir gave %s, want the resolved %s", dir, want)
			}
			var st syscall.Stat_t
			if err := syscall.Lstat(dir, &st); err != nil {
				t.Fatal(err)
			}
			if st.Uid != nobody.Uid || st.Mode&0o777 != 0o700 || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
				t.Errorf("%s: uid %d mode %#o, want nobody's folder, 0700", dir, st.Uid, st.Mode)
			}
			if again, err := ownedDir(dir, nobody); err != nil || again != dir {
				t.Errorf("ownedDir on the folder it made: %q, %v", again, err)
			}
		})
	}
}

// nobodyAsRoot is the account nobody, for tests that give it folders, which needs root.
func nobodyAsRoot(t *testing.T) *worker.Account {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("ownedDir chowns: needs root; CI runs as root")
	}
	nobody, err := worker.LookupAccount("nobody")
	if err != nil {
		t.Fatal(err)
	}
	return nobody
}
