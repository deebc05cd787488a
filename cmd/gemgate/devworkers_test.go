package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gemgate/gemgate/worker"
)

// ownedDir makes the workers' folder and then gives it to nobody. Where the folder's parent
// (TMPDIR) can be written by another account without the sticky bit, that account can put a
// link in the folder's place between the two steps, and a chown that follows links gives
// nobody any file the link names. ownedDir refuses such a parent, and gives the folder away
// through a descriptor opened without following links.
func TestOwnedDirNeverGivesAwayWhatALinkNames(t *testing.T) {
	nobody := nobodyAsRoot(t)
	parent := t.TempDir()
	if err := os.Chmod(parent, 0o777); err != nil { // writable by others, no sticky bit
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "root-secret")
	if err := os.WriteFile(target, []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, devWorkersDirName)
	aside := filepath.Join(parent, "aside")

	var stop, swapped atomic.Bool
	done := make(chan struct{})
	go func() { // the other account, racing
		defer close(done)
		runtime.LockOSThread()
		for !stop.Load() {
			if syscall.Rename(dir, aside) == nil {
				if syscall.Symlink(target, dir) == nil {
					swapped.Store(true)
				}
			}
		}
	}()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		os.Remove(dir)
		os.Remove(aside)
		if _, err := ownedDir(dir, nobody); err == nil {
			stop.Store(true)
			<-done
			t.Fatalf("ownedDir(%s) took a parent others may write without the sticky bit", dir)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(target, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid == nobody.Uid {
			stop.Store(true)
			<-done
			t.Fatalf("ownedDir(%s) gave %s (root's file, which a link swapped in place of the folder named) to nobody: os.Chown follows links", dir, target)
		}
	}
	stop.Store(true)
	<-done
	t.Logf("no chown through the link in 3s (swapped at least once: %v)", swapped.Load())
}

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
