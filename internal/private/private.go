// Package private checks that what gemgate trusts on disk is its own user's alone: that no
// other account can write it, or rename or replace it in its folder. gemgate keeps there what
// decides who is who or what runs as whom (the development issuer's key, the GemStone relay's
// script and service ini), so whoever could change such a file would act as any user.
//
// It must never import another gemgate package: any package may use it.
package private

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Folder refuses a folder in which another account could rename or replace an entry: one
// that belongs to another account (root excepted), or that others, or a group that is not the
// user's alone (groupIsOwn), may write without the sticky bit. A folder reached through a symbolic link is judged
// as the folder it names.
func Folder(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	sticky := fi.Mode()&fs.ModeSticky != 0
	switch perm := fi.Mode().Perm(); {
	case int(st.Uid) != os.Getuid() && st.Uid != 0:
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d)", dir, st.Uid, os.Getuid())
	case perm&0o002 != 0 && !sticky:
		return fmt.Errorf("%s may be written by others (mode %v)", dir, perm)
	case perm&0o020 != 0 && !sticky && (int(st.Gid) != os.Getgid() || !groupIsOwn(st.Gid, groupFiles)):
		return fmt.Errorf("%s may be written by group %d (mode %v)", dir, st.Gid, perm)
	}
	return nil
}

// groupFiles are the account databases groupIsOwn reads.
var groupFiles = [2]string{"/etc/passwd", "/etc/group"}

// groupIsOwn reports whether group gid is this user's alone, as far as the account files
// say: no other account has it as its primary group, and it lists no member but this user. A
// user's private group (a group of one, as most systems make for each user) is; a shared
// primary group (users, staff) is not. Accounts that only a directory service knows are not
// seen; files that cannot be read count as a shared group.
func groupIsOwn(gid uint32, files [2]string) bool {
	passwd, err := os.ReadFile(files[0])
	if err != nil {
		return false
	}
	me, uid, g := "", strconv.Itoa(os.Getuid()), strconv.FormatUint(uint64(gid), 10)
	for line := range strings.Lines(string(passwd)) {
		f := strings.Split(strings.TrimRight(line, "\n"), ":")
		if len(f) < 4 {
			continue
		}
		if f[3] == g && f[2] != uid {
			return false // another account's primary group
		}
		if f[2] == uid {
			me = f[0]
		}
	}
	group, err := os.ReadFile(files[1])
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(group)) {
		f := strings.Split(strings.TrimRight(line, "\n"), ":")
		if len(f) < 4 || f[2] != g || f[3] == "" {
			continue
		}
		for _, m := range strings.Split(f[3], ",") {
			if m != me {
				return false
			}
		}
	}
	return true
}

// Owned refuses a path that is a symbolic link, that belongs to another account, or that its
// group or others may write. A path that does not exist passes: its folder decides who may
// create it.
func Owned(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link", path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d)", path, st.Uid, os.Getuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s may be written by others (mode %v)", path, fi.Mode().Perm())
	}
	return nil
}

// maxLinks bounds the symbolic links Path follows, as the kernel does (40).
const maxLinks = 40

// Path refuses a path that another account could make lead elsewhere, and answers where it
// leads, with no link left. It walks the path as the kernel does, one name at a time from /:
// a link's target is read from the folder the link really lies in, and ".." goes up from the
// folder reached. Every folder the walk enters must pass Folder, so every folder above the
// path, above each link on its way and above where it ends: whoever may rename an entry in
// any of them can put a folder or a link of their own in its place. Every link on the way
// must be this user's or root's.
func Path(path string) (string, error) {
	if !filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		path = wd + "/" + path // not Clean: ".." must go up from where a link led
	}
	rest := strings.Split(path, "/")
	at, links := "/", 0 // the folder reached, through no link
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			at = filepath.Dir(at)
			continue
		}
		if err := Folder(at); err != nil {
			return "", err
		}
		next := filepath.Join(at, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			at = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: more than %d symbolic links", path, maxLinks)
		}
		// A link's owner may re-point it whenever they like, even in a sticky folder, which
		// only keeps others from renaming what is not theirs: only this user's links, and
		// root's, are followed.
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() && st.Uid != 0 {
			return "", fmt.Errorf("%s is a symbolic link of uid %d, not of this user (uid %d)", next, st.Uid, os.Getuid())
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			at = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return at, nil
}

// Dir is Path for a folder that must itself pass Folder: where dir leads, once neither it nor
// anything on the way to it can be changed by another account.
func Dir(dir string) (string, error) {
	real, err := Path(dir)
	if err != nil {
		return "", err
	}
	if err := Folder(real); err != nil {
		return "", err
	}
	return real, nil
}

// MkdirAll is os.MkdirAll only where no other account can redirect what it makes: the nearest
// folder of dir that exists passes Dir first. os.MkdirAll alone would follow a link another
// account put where a folder was still to be made (a predictable path under /tmp).
func MkdirAll(dir string, perm os.FileMode) error {
	// The folders checked are found by taking names off the end, and os.MkdirAll makes them
	// the same way: the cleaned path is what both read ("a/link/../x" would otherwise be
	// checked at "a" and made beside where link leads).
	dir = filepath.Clean(dir)
	at := dir
	for {
		if _, err := os.Lstat(at); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		up := filepath.Dir(at)
		if up == at {
			break
		}
		at = up
	}
	if _, err := Dir(at); err != nil {
		return err
	}
	return os.MkdirAll(dir, perm)
}

// WriteFile writes b to name with mode through a temporary file in the same folder, renamed
// over name, so that a reader never sees a part of it.
func WriteFile(name string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err = f.Chmod(mode); err == nil {
		_, err = f.Write(b)
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}
