package main

import (
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gemgate/gemgate/worker"
)

// ownedDir makes the workers' folder with os.Mkdir and then gives it to nobody with
// os.Chown, which follows a symbolic link. Where the folder's parent (TMPDIR) can be written
// by another account without the sticky bit, that account can put a link in the folder's
// place between the two calls, and root then gives nobody any file it names. ownedDir must
// give away only the folder it made (fchown on a descriptor opened O_NOFOLLOW|O_DIRECTORY,
// or Lchown), or refuse such a parent.
func TestRev8OwnedDirChownFollowsASwappedLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("ownedDir chowns: needs root")
	}
	nobody, err := worker.LookupAccount("nobody")
	if err != nil {
		t.Skip(err)
	}
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
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		os.Remove(dir)
		os.Remove(aside)
		ownedDir(dir, nobody)
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
	t.Logf("no chown through the link in 8s (swapped at least once: %v)", swapped.Load())
}
