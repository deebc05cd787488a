package gemstone

import (
	"os"
	"path/filepath"
	"testing"
)

const iniForLinks = "set gemstone gs64stone\nset user gemgate_svc\nset password pw\n"

// A chain of links: the folder of a link in between is held privately too, as are those of
// the configured path and of the file: whoever may write it could re-point the link at an
// ini of their own, which topaz would read as commands at every later session.
func TestServiceINILinkOnTheWayIsHeldPrivately(t *testing.T) {
	base := t.TempDir()
	mine, open, store := filepath.Join(base, "mine"), filepath.Join(base, "open"), filepath.Join(base, "store")
	for _, d := range []string{mine, open, store} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(open, 0o777); err != nil { // any account may write it, no sticky bit
		t.Fatal(err)
	}
	real := filepath.Join(store, "service.ini")
	if err := os.WriteFile(real, []byte(iniForLinks), 0o600); err != nil {
		t.Fatal(err)
	}
	hop := filepath.Join(open, "hop.ini")
	if err := os.Symlink(real, hop); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(mine, "service.ini")
	if err := os.Symlink(hop, path); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadServiceINI(path); err == nil {
		t.Errorf("ReadServiceINI took %s, whose link %s lies in %s, which any account may write", path, hop, open)
	}
}

// Every folder above the ini, and above the relay script's folder, up to /, is held
// privately: one that any account may write lets them rename the whole folder below away and
// put one of their own, with their ini or script, in its place.
func TestFoldersAboveTheINIAndScriptAreHeldPrivately(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	mine := filepath.Join(open, "mine")
	if err := os.MkdirAll(mine, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(mine, "service.ini")
	if err := os.WriteFile(path, []byte(iniForLinks), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadServiceINI(path); err == nil {
		t.Errorf("ReadServiceINI took %s under %s, which any account may write (rename %s away)", path, open, mine)
	}
	// The relay script alike.
	if _, err := InstallScript(filepath.Join(mine, "gemgate")); err == nil {
		t.Errorf("InstallScript took a folder under %s, which any account may write", open)
	}
}
