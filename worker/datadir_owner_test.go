//go:build linux

package worker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A data_dir that another account owns (it made the folder first, in a shared place such as
// /tmp), or below a folder it owns, lets that account swap a user's folder, once gemgate has
// checked it (not a link, the right owner), for a link to a folder of its choosing: bubblewrap
// binds the folder a link leads to, writable, as the user's. The check then proves nothing, so
// such a data_dir is refused before any folder is made in it. Here the swap is made as if the
// race were won; the worker, told its own folder, writes where the other account chose.
func TestDataDirOfAnotherAccountIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("giving folders to other accounts needs root; CI runs as root")
	}
	bwrap := probe(t, nil)
	data, _ := dataDirFixture(t)
	const other = 4242 // the account that made data_dir
	if err := os.Chown(data, other, other); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o755); err != nil {
		t.Fatal(err)
	}
	l := &CommandLauncher{DataDir: data, Sandbox: &Sandbox{Bwrap: bwrap},
		Command: []string{"/bin/sh", "-c", `echo from-alice > "$GEMGATE_USER_DATA_DIR/n"; printf '{"jsonrpc":"2.0","method":"done"}\n'; exec cat >/dev/null`}}
	ln, err := l.Launch(context.Background(), Identity{User: "alice", Subject: "alice-sub"})
	if err != nil {
		if !strings.Contains(err.Error(), "data_dir") {
			t.Errorf("refused, but not for data_dir: %v", err)
		}
		return
	}
	// The other account wins the race: alice's folder, checked, becomes its link.
	chosen := filepath.Join(filepath.Dir(data), "chosen")
	if err := os.Mkdir(chosen, 0o777); err != nil {
		t.Fatal(err)
	}
	alice := filepath.Join(data, "alice")
	if err := os.Rename(alice, alice+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(chosen, alice); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	ln.OnMessage, ln.StopGrace = rec.add, 200*time.Millisecond
	p, err := Start(ln.Spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	firstMessage(t, rec, "done")
	b, _ := os.ReadFile(filepath.Join(chosen, "n"))
	t.Errorf("data_dir %s belongs to uid %d, and gemgate made alice's folder in it and started her worker; "+
		"once that account swapped the folder for a link, alice's note went to the folder it chose: %q", data, other, b)
}

// A data_dir of root's or gemgate's, writable by all (a Kubernetes emptyDir: root's, 0777, in
// a pod where no other account runs) is taken; one below a folder every account may write
// without the sticky bit is not (any of them could move data_dir away), nor one reached
// through a link in another account's folder; below a sticky one (/tmp) it is.
func TestDataDirWritableByAllIsTakenBelowSafeFolders(t *testing.T) {
	base, err := os.MkdirTemp("/var/tmp", "gemgate-datadir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	volume := filepath.Join(base, "volume")
	open := filepath.Join(base, "open")
	for _, d := range []string{volume, filepath.Join(open, "data")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{base, volume} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(volume, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := dataDirIsOurs(volume); err != nil {
		t.Errorf("an emptyDir-like data_dir (0777, gemgate's or root's): %v", err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := dataDirIsOurs(filepath.Join(open, "data")); err == nil {
		t.Error("a data_dir below a folder every account may write (not sticky) is taken")
	}
	// Reached through a link in a folder of another account's, which could re-point it.
	theirs := filepath.Join(base, "theirs")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(volume, filepath.Join(theirs, "data")); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(theirs, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if _, err := dataDirIsOurs(filepath.Join(theirs, "data")); err == nil {
			t.Error("a data_dir reached through a link in another account's folder is taken")
		}
	}
	if err := os.Chmod(open, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if _, err := dataDirIsOurs(filepath.Join(open, "data")); err != nil {
		t.Errorf("a data_dir below a sticky folder: %v", err)
	}
}
