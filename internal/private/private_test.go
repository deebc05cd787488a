package private

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFolder(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		dir  string
		want string // "" when held privately
	}{
		{mk("own", 0o755), ""},
		{mk("sticky", 0o777|os.ModeSticky), ""},
		{mk("open", 0o777), "may be written by others"},
		{mk("group-own", 0o775), ""}, // the user's own group
	} {
		err := Folder(tc.dir)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Folder(%s) = %v, want %q", filepath.Base(tc.dir), err, tc.want)
		}
	}
	if err := Folder(filepath.Join(base, "missing")); err == nil {
		t.Error("a missing folder passed")
	}
}

func TestOwned(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Owned(file); err != nil {
		t.Errorf("a 0600 file of this user's: %v", err)
	}
	if err := Owned(filepath.Join(base, "missing")); err != nil {
		t.Errorf("a missing path: %v", err)
	}
	link := filepath.Join(base, "l")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if err := Owned(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a link: %v", err)
	}
	if err := os.Chmod(file, 0o620); err != nil {
		t.Fatal(err)
	}
	if err := Owned(file); err == nil || !strings.Contains(err.Error(), "may be written by others") {
		t.Errorf("a group-writable file: %v", err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chmod(file, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(file, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := Owned(file); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("a file of another account: %v", err)
		}
	}
}
