package private

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mkdirMode(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func writeMode(t *testing.T, p, text string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// A relative link's target is read, as the kernel reads it, from the folder the link really
// lies in, after any folder link above it: with a "../" target below a folder link, Path
// judges the file a reader opens (here in a folder anyone may write), not a private decoy
// where the link's path as written would lead. With that folder private, it answers that file.
func TestPathReadsARelativeLinkWhereItLies(t *testing.T) {
	base := t.TempDir()
	mkdirMode(t, filepath.Join(base, "a"), 0o700)
	mkdirMode(t, filepath.Join(base, "b", "c"), 0o755)
	mkdirMode(t, filepath.Join(base, "b"), 0o777) // anyone may rename entries here
	if err := os.Symlink(filepath.Join(base, "b", "c"), filepath.Join(base, "a", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../g", filepath.Join(base, "b", "c", "f")); err != nil {
		t.Fatal(err)
	}
	writeMode(t, filepath.Join(base, "a", "g"), "decoy: private", 0o600)
	writeMode(t, filepath.Join(base, "b", "g"), "what is really read: anyone's", 0o666)

	path := filepath.Join(base, "a", "link", "f")
	read, _ := os.ReadFile(path)
	got, err := Path(path)
	real, _ := filepath.EvalSymlinks(path)
	if err == nil {
		t.Errorf("Path(%s) = %s, nil; the file read is %s (%q), in a folder anyone may write; want an error",
			path, got, real, read)
	}
	if err := os.Chmod(filepath.Join(base, "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Path(path); err != nil || got != real {
		t.Errorf("with the folder private: Path(%s) = %q, %v; want %s, the file read", path, got, err, real)
	}
}

// A folder link that leads through another link: the folder the middle link lies in is held
// privately too, since whoever may write it could re-point the whole path.
func TestPathHoldsTheFolderOfEveryLinkOnTheWay(t *testing.T) {
	base := t.TempDir()
	mkdirMode(t, filepath.Join(base, "a"), 0o700)
	mkdirMode(t, filepath.Join(base, "x"), 0o777) // anyone may replace link2
	mkdirMode(t, filepath.Join(base, "b", "c"), 0o700)
	if err := os.Symlink(filepath.Join(base, "x", "link2"), filepath.Join(base, "a", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "b", "c"), filepath.Join(base, "x", "link2")); err != nil {
		t.Fatal(err)
	}
	writeMode(t, filepath.Join(base, "b", "c", "f"), "private", 0o600)
	path := filepath.Join(base, "a", "link", "f")
	if got, err := Path(path); err == nil {
		t.Errorf("Path(%s) = %s, nil; the link x/link2 on the way lies in a folder anyone may write (mode 0777): want an error", path, got)
	}
}

// A link of another account is not followed, in a sticky folder (/tmp) as anywhere: the
// sticky bit keeps others from renaming this user's entries, not a link's owner from
// re-pointing their own after the check. A link of this user's in the same folder is.
func TestPathFollowsNoLinkOfAnotherAccount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a link of another account needs root")
	}
	base := t.TempDir()
	mkdirMode(t, filepath.Join(base, "priv"), 0o700)
	writeMode(t, filepath.Join(base, "priv", "f"), "private", 0o600)
	sticky := filepath.Join(base, "tmp")
	mkdirMode(t, sticky, 0o777|os.ModeSticky)
	for _, c := range []struct{ link, target, path string }{
		{"lf", filepath.Join(base, "priv", "f"), "lf"},                // the last name a link
		{"ld", filepath.Join(base, "priv"), filepath.Join("ld", "f")}, // a folder link on the way
	} {
		link := filepath.Join(sticky, c.link)
		if err := os.Symlink(c.target, link); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(sticky, c.path)
		if got, err := Path(p); err != nil || got != filepath.Join(base, "priv", "f") {
			t.Errorf("this user's link: Path(%s) = %q, %v", p, got, err)
		}
		if err := os.Lchown(link, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if got, err := Path(p); err == nil || !strings.Contains(err.Error(), "symbolic link of uid 65534") {
			t.Errorf("a link of uid 65534: Path(%s) = %q, %v; want it refused", p, got, err)
		}
	}
}

// MkdirAll makes the folder it checked: with ".." after a link in the path, the kernel would
// make it beside where the link leads (here in a folder anyone may write), while the checks
// took the names off as text and judged the private folder the link lies in.
func TestMkdirAllMakesWhatItChecked(t *testing.T) {
	base := t.TempDir()
	mkdirMode(t, filepath.Join(base, "a"), 0o700)
	mkdirMode(t, filepath.Join(base, "open", "sub"), 0o700)
	mkdirMode(t, filepath.Join(base, "open"), 0o777)
	if err := os.Symlink(filepath.Join(base, "open", "sub"), filepath.Join(base, "a", "link")); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(filepath.Join(base, "a", "link")+"/../x", 0o700); err != nil { // Join would clean it
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(base, "open", "x")); err == nil {
		t.Error("MkdirAll made open/x, in a folder anyone may write, after checking the private folder a")
	}
	if fi, err := os.Lstat(filepath.Join(base, "a", "x")); err != nil || !fi.IsDir() {
		t.Errorf("a/x, the folder checked, was not made: %v", err)
	}
}
