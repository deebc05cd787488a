package private

import (
	"os"
	"path/filepath"
	"strconv"
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

// Path follows links (relative and absolute) to where a path leads, and refuses one that
// passes through, or ends below, a folder another account may write, at any height.
func TestPath(t *testing.T) {
	base := t.TempDir()
	mk := func(rel string, mode os.FileMode) string {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	store := mk("store", 0o700)
	file := filepath.Join(store, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mine := mk("mine", 0o700)
	rel := filepath.Join(mine, "rel")
	if err := os.Symlink("../store/f", rel); err != nil {
		t.Fatal(err)
	}
	if got, err := Path(rel); err != nil || got != file {
		t.Errorf("a relative link in a private folder: %q, %v; want %q", got, err, file)
	}

	open := mk("open", 0o777)
	hop := filepath.Join(open, "hop")
	if err := os.Symlink(file, hop); err != nil {
		t.Fatal(err)
	}
	via := filepath.Join(mine, "via")
	if err := os.Symlink(hop, via); err != nil {
		t.Fatal(err)
	}
	if _, err := Path(via); err == nil || !strings.Contains(err.Error(), "may be written by others") {
		t.Errorf("a link on the way in a folder of mode 0777: %v", err)
	}

	deep := mk("open/a/b", 0o700)
	below := filepath.Join(deep, "f")
	if err := os.WriteFile(below, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Path(below); err == nil || !strings.Contains(err.Error(), "may be written by others") {
		t.Errorf("a file two folders below a folder of mode 0777: %v", err)
	}

	dirLink := filepath.Join(mine, "dirlink")
	if err := os.Symlink(deep, dirLink); err != nil {
		t.Fatal(err)
	}
	if _, err := Path(filepath.Join(dirLink, "f")); err == nil {
		t.Error("a path through a folder link that leads below a folder of mode 0777 passed")
	}

	loop := filepath.Join(mine, "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	if _, err := Path(loop); err == nil || !strings.Contains(err.Error(), "symbolic links") {
		t.Errorf("a link to itself: %v", err)
	}
}

// A group is the user's alone when no other account has it as its primary group and it
// lists no member but the user: a private group passes, a shared primary group (users) or
// one with other members does not, nor one whose account files cannot be read.
func TestGroupIsOwn(t *testing.T) {
	uid := strconv.Itoa(os.Getuid())
	dir := t.TempDir()
	files := func(passwd, group string) [2]string {
		p, g := filepath.Join(dir, "passwd"), filepath.Join(dir, "group")
		if err := os.WriteFile(p, []byte(passwd), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(g, []byte(group), 0o600); err != nil {
			t.Fatal(err)
		}
		return [2]string{p, g}
	}
	me := "me:x:" + uid + ":4242:Me:/home/me:/bin/sh\n"
	for name, tc := range map[string]struct {
		passwd, group string
		want          bool
	}{
		"private":             {me, "me:x:4242:\n", true},
		"private, listing me": {me, "me:x:4242:me\n", true},
		"another's primary":   {me + "other:x:4343:4242::/home/other:/bin/sh\n", "users:x:4242:\n", false},
		"another member":      {me, "me:x:4242:me,other\n", false},
	} {
		if got := groupIsOwn(4242, files(tc.passwd, tc.group)); got != tc.want {
			t.Errorf("%s: groupIsOwn = %v, want %v", name, got, tc.want)
		}
	}
	if groupIsOwn(4242, [2]string{filepath.Join(dir, "none"), filepath.Join(dir, "group")}) {
		t.Error("unreadable account files: the group was taken as the user's own")
	}
}

func TestWriteFileReplacesWholeAndLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(name, []byte("old contents, longer than the new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(name, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(name)
	if err != nil || string(b) != "new" {
		t.Fatalf("read %q, %v; want %q", b, err, "new")
	}
	if fi, _ := os.Stat(name); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the folder holds %d entries, want the file alone", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Error("a write into a missing folder succeeded")
	}
}
