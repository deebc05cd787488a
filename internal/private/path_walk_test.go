package private

import (
	"os"
	"path/filepath"
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
