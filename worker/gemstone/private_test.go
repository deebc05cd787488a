package gemstone

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// otherUID is an account that is not gemgate's.
const otherUID = 65534

// asRoot skips a test that must make files of another account: only root can.
func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a file of another account needs root")
	}
}

// The relay script's folder is foreseeable without a cache directory (<TMPDIR>/gemgate-<uid>),
// so another account can make it first in a shared /tmp: with mode 0755 no one else may write
// it, but its owner can rename a new script over the checked one at any time, and every
// later session's topaz runs that script holding the user's token. InstallScript refuses a
// folder of another account, and the script's contents are never written there.
func TestScriptFolderOfAnotherAccountIsRefused(t *testing.T) {
	asRoot(t)
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil { // a shared /tmp
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	t.Setenv("HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	dir := DefaultScriptDir()
	if !strings.HasPrefix(dir, tmp) {
		t.Fatalf("DefaultScriptDir is %s, not under TMPDIR %s", dir, tmp)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	path, err := InstallScript(dir)
	if err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Fatalf("InstallScript(%s), a folder of uid %d: got %q, %v; want it refused", dir, otherUID, path, err)
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Errorf("something was written into the refused folder: %v", names)
	}

	// The same folder made this user's is taken, in the sticky /tmp.
	if err := os.Chown(dir, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallScript(dir); err != nil {
		t.Errorf("a folder of this user's own in a sticky /tmp: %v", err)
	}
}

// A script folder reached through a symbolic link, one in a folder others may write (they
// could rename it away), and a script there of another account are refused too.
func TestScriptFolderAndScriptMustBeHeldPrivately(t *testing.T) {
	t.Run("symlink", func(t *testing.T) {
		base := t.TempDir()
		real := filepath.Join(base, "real")
		if err := os.Mkdir(real, 0o700); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(base, "link")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		if _, err := InstallScript(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("a folder through a symbolic link: %v", err)
		}
	})
	t.Run("parent writable by others", func(t *testing.T) {
		parent := filepath.Join(t.TempDir(), "open")
		if err := os.Mkdir(parent, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(parent, 0o777); err != nil {
			t.Fatal(err)
		}
		if _, err := InstallScript(filepath.Join(parent, "scripts", "relay")); err == nil || !strings.Contains(err.Error(), "may be written by others") {
			t.Errorf("a folder inside a folder of mode 0777: %v", err)
		}
		// Refused before anything was made there.
		if _, err := os.Lstat(filepath.Join(parent, "scripts")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("InstallScript made a folder inside the folder of mode 0777 before refusing it: %v", err)
		}
	})
	t.Run("script of another account", func(t *testing.T) {
		asRoot(t)
		dir := t.TempDir()
		path, err := InstallScript(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, otherUID, otherUID); err != nil {
			t.Fatal(err)
		}
		if _, err := InstallScript(dir); err == nil || !strings.Contains(err.Error(), "belongs to uid") {
			t.Errorf("the script, same contents, of another account: %v", err)
		}
	})
}

// topaz reads the service ini again, as topaz commands, at the start of every session, in the
// process that holds the user's token: an ini another account owns, or one in a folder
// anyone may write (where it can be swapped after the check at start), or a symbolic link
// there (which anyone may re-point), is refused. An ini of this user's reached through a
// link in a private folder is still taken.
func TestServiceINIMustBeHeldPrivately(t *testing.T) {
	const ini = "set gemstone gs64stone\nset user gemgate_svc\nset password s3cret\n"
	write := func(t *testing.T, path string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(ini), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	openDir := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "shared")
		if err := os.Mkdir(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Run("owner", func(t *testing.T) {
		asRoot(t)
		p := filepath.Join(t.TempDir(), "service.ini")
		write(t, p)
		if err := os.Chown(p, otherUID, otherUID); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadServiceINI(p); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("a 0600 ini of uid %d: %v", otherUID, err)
		}
	})
	t.Run("folder writable by anyone", func(t *testing.T) {
		p := filepath.Join(openDir(t), "service.ini")
		write(t, p)
		if _, err := ReadServiceINI(p); err == nil || !strings.Contains(err.Error(), "may be written by others") {
			t.Errorf("an ini in a folder of mode 0777: %v", err)
		}
	})
	t.Run("link in a folder writable by anyone", func(t *testing.T) {
		real := filepath.Join(t.TempDir(), "service.ini")
		write(t, real)
		link := filepath.Join(openDir(t), "service.ini")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadServiceINI(link); err == nil || !strings.Contains(err.Error(), "may be written by others") {
			t.Errorf("a link to the ini in a folder of mode 0777: %v", err)
		}
	})
	t.Run("link to a folder writable by anyone", func(t *testing.T) {
		real := filepath.Join(openDir(t), "service.ini")
		write(t, real)
		link := filepath.Join(t.TempDir(), "service.ini")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadServiceINI(link); err == nil || !strings.Contains(err.Error(), "may be written by others") {
			t.Errorf("a private link to an ini in a folder of mode 0777: %v", err)
		}
	})
	t.Run("private link", func(t *testing.T) {
		real := filepath.Join(t.TempDir(), "service.ini")
		write(t, real)
		link := filepath.Join(t.TempDir(), "service.ini")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadServiceINI(link); err != nil || got.User != "gemgate_svc" {
			t.Errorf("a private link to a private ini: %+v, %v", got, err)
		}
	})
}

// Any account that may write the global directory's locks can start a NetLDI there, under
// the default name or one that lists first: user sessions, each given the user's token at
// login, are forked only through a NetLDI of the stone's owner, and none is chosen when the
// stone's owner is not known.
func TestNetLDIOfAnotherOwnerIsNotChosen(t *testing.T) {
	for name, tc := range map[string]struct{ out, want string }{
		"default name": {`  Status     Version   Owner        Pid  Port  Started      Type    Name
  OK         3.7.5     mallory    11111 40000 Aug 23 12:31  Netldi  gs64ldi
  OK         3.7.5     gsadmin    96453 65166 Aug 23 12:31  Netldi  prodldi
  OK         3.7.5     gsadmin    60042 56820 Aug 20 08:53  Stone   gs64stone
`, "prodldi"},
		"sorts first": {`  Status     Version   Owner        Pid  Port  Started      Type    Name
  OK         3.7.5     mallory    11111 40000 Aug 23 12:31  Netldi  aaa
  OK         3.7.5     gsadmin    96453 65166 Aug 23 12:31  Netldi  prodldi
  OK         3.7.5     gsadmin    60042 56820 Aug 20 08:53  Stone   gs64stone
`, "prodldi"},
		"only another's": {`  Status     Version   Owner        Pid  Port  Started      Type    Name
  OK         3.7.5     mallory    11111 40000 Aug 23 12:31  Netldi  gs64ldi
  OK         3.7.5     gsadmin    60042 56820 Aug 20 08:53  Stone   gs64stone
`, ""},
		"no stone": {`  Status     Version   Owner        Pid  Port  Started      Type    Name
  OK         3.7.5     gsadmin    96453 65166 Aug 23 12:31  Netldi  gs64ldi
`, ""},
	} {
		servers := ParseGslist(tc.out)
		if got := ChooseNetLDI(servers, "gs64stone"); got != tc.want {
			t.Errorf("%s: ChooseNetLDI = %q, want %q", name, got, tc.want)
		}
		others := strings.Join(OtherNetLDIs(servers, "gs64stone"), ", ")
		if strings.Contains(tc.out, "mallory") != strings.Contains(others, "(owner mallory)") {
			t.Errorf("%s: OtherNetLDIs = %q", name, others)
		}
	}
}
