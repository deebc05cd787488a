package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/gemgate/gemgate/internal/private"
	"github.com/gemgate/gemgate/worker"
)

// devWorkerAccount is the account gemgate dev runs its workers as when it runs as root with
// no sandbox and no worker_user (a container, a host without bubblewrap), where serve
// refuses to start: dev must run with nothing else to install, and never with workers as
// root that could read its memory and the development issuer's key.
const devWorkerAccount = "nobody"

// devWorkersDirName is the workers' data directory in that case, under the system's
// temporary directory: the dev data directory is root's (under /root, which nobody cannot
// enter) and holds the development issuer's key, which a worker must never reach.
const devWorkersDirName = "gemgate-dev-workers"

// devWorkersAsNobody tells whether gemgate dev, as root, would run workers as nobody if it
// finds no sandbox: only for the demo worker and a command, not for GemStone, whose relay
// reads files an operator set up for a chosen account.
func (c *Config) devWorkersAsNobody() bool {
	return c.dev && runningAsRoot() && c.WorkerUser == "" && c.Worker != "gemstone"
}

// runDevWorkersAsNobody makes gemgate dev's workers run as nobody, with a data directory of
// their own that nobody owns, and says so.
func (s *server) runDevWorkersAsNobody(l *worker.CommandLauncher) error {
	a, err := worker.LookupAccount(devWorkerAccount)
	if err != nil {
		return fmt.Errorf("worker_sandbox: no working sandbox, and no account %s to run workers as (%v): %w", devWorkerAccount, err, ErrRootWorkers)
	}
	dir, err := ownedDir(filepath.Join(os.TempDir(), devWorkersDirName), a)
	if err != nil {
		return fmt.Errorf("the data directory for workers running as %s (%s under TMPDIR): %w", devWorkerAccount, devWorkersDirName, err)
	}
	s.cfg.WorkerUser = devWorkerAccount
	l.DataDir = dir
	s.devWorkersDir = dir
	s.log.Warn("gemgate dev runs as root with no worker sandbox: its workers run as the account "+devWorkerAccount+
		", with their own data directory (gemgate serve refuses this and asks for worker_user)",
		"worker_user", devWorkerAccount, "workers_data_dir", dir,
		"fix", "set worker_user to choose the account, or install bubblewrap where it may create namespaces")
	return nil
}

// ownedDir is dir, made for the account a (mode 0700) unless it exists, with the links on the
// way to it resolved. Every folder on the way must be root's and closed to other writers
// unless sticky (private.Dir), so no other account can move it once checked, and open to a's
// search. An existing folder must be a folder owned by a and closed to everyone else. It is
// opened without following links and given to a through that descriptor, so nothing
// swapped in its place is given away.
func ownedDir(dir string, a *worker.Account) (string, error) {
	parent, err := private.Dir(filepath.Dir(dir))
	if err != nil {
		return "", err
	}
	for d := parent; ; d = filepath.Dir(d) {
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			return "", err
		}
		if !searchable(st, a) {
			return "", fmt.Errorf("%s cannot be entered by %s, which the workers run as; set TMPDIR to a folder it can reach, such as /tmp", d, a.Name)
		}
		if d == "/" {
			break
		}
	}
	dir = filepath.Join(parent, filepath.Base(dir))
	made := true
	if err := os.Mkdir(dir, 0o700); errors.Is(err, fs.ErrExist) {
		made = false
	} else if err != nil {
		return "", err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return "", fmt.Errorf("%s exists and is not a directory (a link or a file); remove it", dir)
	} else if err != nil {
		return "", fmt.Errorf("opening %s: %w", dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", err
	}
	if made && st.Uid == 0 {
		if err := unix.Fchown(fd, int(a.Uid), int(a.Gid)); err != nil {
			os.Remove(dir)
			return "", fmt.Errorf("giving %s to %s: %w", dir, a.Name, err)
		}
		return dir, nil
	}
	switch {
	case st.Uid != a.Uid:
		return "", fmt.Errorf("%s exists and is not owned by %s; remove it", dir, a.Name)
	case st.Mode&0o077 != 0:
		return "", fmt.Errorf("%s is open to other accounts (mode %#o); remove it or chmod 700 it", dir, st.Mode&0o777)
	}
	return dir, nil
}

// searchable tells whether account a may pass through the folder st.
func searchable(st unix.Stat_t, a *worker.Account) bool {
	switch {
	case st.Uid == a.Uid:
		return st.Mode&0o100 != 0
	case st.Gid == a.Gid || slices.Contains(a.Groups, st.Gid):
		return st.Mode&0o010 != 0
	}
	return st.Mode&0o001 != 0
}
